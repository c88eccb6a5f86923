// Command rawout is a test guest, written without the SDK, whose answers
// break the ABI on request. It decodes the request with the abi package and
// the tool name picks the answer:
//
//	oversize   a packed length above abi.MaxMessageBytes
//	beyond     a pointer past the end of linear memory
//	garbage    bytes that are not a protobuf message
//	truncated  a field whose length runs past the end
//	action     a well-formed answer with an unknown action
//	ok         a well-formed answer setting X-Raw: ok and X-Count, the
//	           number of calls this instance has served
//
// antler_alloc misbehaves by size: above 1 MiB it returns null, above 4 KiB
// a pointer outside memory.
package main

import (
	"strconv"
	"unsafe"

	"github.com/antler-mcp/antler/abi"
)

var (
	in    []byte
	out   []byte
	calls int
	enc   abi.Encoder
	req   abi.InterceptRequest
)

//go:wasmexport antler_abi_version
func version() int32 { return abi.PackVersion(abi.Major, abi.Minor) }

//go:wasmexport antler_features
func features() int64 { return int64(abi.FeatureIntercept) }

//go:wasmexport antler_alloc
func alloc(size int32) int32 {
	switch {
	case size > 1<<20:
		return 0
	case size > 4<<10:
		return -64 // 0xFFFFFFC0: far past any memory the host allows
	}
	if int(size) > cap(in) {
		in = make([]byte, size)
	}
	in = in[:cap(in)]
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(in))))
}

func pack(b []byte) int64 {
	out = b
	return int64(abi.Pack(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), uint32(len(b))))
}

//go:wasmexport antler_intercept
func intercept(ptr, length int32) int64 {
	b := unsafe.Slice((*byte)(unsafe.Add(nil, uintptr(ptr))), int(length))
	calls++
	if err := req.Decode(b); err != nil {
		return pack([]byte("request did not decode"))
	}
	switch req.Tool {
	case "oversize":
		return pack(make([]byte, 16))&^0xFFFFFFFF | int64(abi.MaxMessageBytes+1)
	case "beyond":
		return int64(abi.Pack(0xFFFF0000, 64))
	case "garbage":
		return pack([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	case "truncated":
		return pack([]byte{0x12, 0x7f, 'x'})
	case "action":
		enc.Reset()
		(&abi.InterceptResponse{Action: 7}).Encode(&enc)
		return pack(enc.Bytes())
	}
	enc.Reset()
	(&abi.InterceptResponse{SetHeaders: []abi.Header{{Name: "X-Raw", Value: "ok"}, {Name: "X-Count", Value: strconv.Itoa(calls)}}}).Encode(&enc)
	return pack(enc.Bytes())
}

func main() {}
