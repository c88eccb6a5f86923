//go:build wasip1

package sdk

import (
	"unsafe"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/guest"
)

// The Wasm glue: Antler's exports and imports for a Go guest built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm .
//
// Memory ownership (abi/README.md): antler_alloc returns a buffer the host
// writes requests into and may reuse until the next antler_alloc; an entry
// point's packed result points at guest memory valid until the next call.

var (
	dispatcher guest.Dispatcher
	inBuf      []byte // kept reachable: the host holds a pointer into it
	outBuf     []byte
	readBuf    []byte
)

//go:wasmexport antler_abi_version
func exportVersion() int32 { return abi.PackVersion(abi.Major, abi.Minor) }

//go:wasmexport antler_features
func exportFeatures() int64 { return int64(guest.Features()) }

//go:wasmexport antler_alloc
func exportAlloc(size int32) int32 {
	if size < 0 || size > abi.MaxMessageBytes {
		return 0
	}
	if int(size) > cap(inBuf) {
		inBuf = make([]byte, size)
	}
	inBuf = inBuf[:cap(inBuf)]
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(inBuf))))
}

func input(ptr, length int32) []byte {
	if length <= 0 {
		return nil
	}
	// The host passes a linear-memory address; unsafe.Add turns it into a
	// pointer without the uintptr round trip vet warns about.
	return unsafe.Slice((*byte)(unsafe.Add(nil, uintptr(ptr))), int(length))
}

func output(b []byte) int64 {
	outBuf = b
	if len(b) == 0 {
		return 0
	}
	return int64(abi.Pack(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), uint32(len(b))))
}

//go:wasmexport antler_intercept
func exportIntercept(ptr, length int32) int64 {
	return output(dispatcher.Intercept(input(ptr, length)))
}

//go:wasmexport antler_on_result
func exportOnResult(ptr, length int32) int64 {
	return output(dispatcher.Result(input(ptr, length)))
}

//go:wasmexport antler_task_submit
func exportTaskSubmit(ptr, length int32) int64 {
	return output(dispatcher.Task("submit", input(ptr, length)))
}

//go:wasmexport antler_task_status
func exportTaskStatus(ptr, length int32) int64 {
	return output(dispatcher.Task("status", input(ptr, length)))
}

//go:wasmexport antler_task_cancel
func exportTaskCancel(ptr, length int32) int64 {
	return output(dispatcher.Task("cancel", input(ptr, length)))
}

//go:wasmexport antler_task_answer
func exportTaskAnswer(ptr, length int32) int64 {
	return output(dispatcher.Task("answer", input(ptr, length)))
}

//go:wasmimport antler_host_v1 log
func importLog(level int32, ptr unsafe.Pointer, length int32)

//go:wasmimport antler_host_v1 call_tool
func hostCallTool(ptr unsafe.Pointer, length int32) int64

//go:wasmimport antler_host_v1 read_result
func hostReadResult(ptr unsafe.Pointer, capacity int32) int32

func hostLog(level int32, msg string) {
	b := []byte(msg)
	importLog(level, unsafe.Pointer(unsafe.SliceData(b)), int32(len(b)))
}

func callTool(req *abi.CallToolRequest) abi.CallToolResponse {
	var enc abi.Encoder
	req.Encode(&enc)
	in := enc.Bytes()
	var p unsafe.Pointer
	if len(in) > 0 {
		p = unsafe.Pointer(unsafe.SliceData(in))
	}
	n := hostCallTool(p, int32(len(in)))
	if n < 0 {
		return abi.CallToolResponse{Error: "the host refused the call"}
	}
	if int(n) > cap(readBuf) {
		readBuf = make([]byte, n)
	}
	readBuf = readBuf[:n]
	var resp abi.CallToolResponse
	if n > 0 {
		hostReadResult(unsafe.Pointer(unsafe.SliceData(readBuf)), int32(n))
	}
	if err := resp.Decode(readBuf); err != nil {
		return abi.CallToolResponse{Error: "malformed host answer"}
	}
	return resp
}
