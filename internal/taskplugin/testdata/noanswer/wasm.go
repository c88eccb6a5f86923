//go:build wasip1

package main

import (
	"unsafe"

	"github.com/antler-mcp/antler/abi"
)

var in, out []byte

//go:wasmexport antler_abi_version
func version() int32 { return abi.PackVersion(1, 0) }

//go:wasmexport antler_features
func features() int64 { return int64(abi.FeatureTaskDriver) }

//go:wasmexport antler_alloc
func alloc(size int32) int32 {
	in = make([]byte, size)
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(in))))
}

func answer(op string) int64 {
	var e abi.Encoder
	r := reply(op)
	r.Encode(&e)
	out = e.Bytes()
	return int64(abi.Pack(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(out)))), uint32(len(out))))
}

//go:wasmexport antler_task_submit
func submit(_, _ int32) int64 { return answer("submit") }

//go:wasmexport antler_task_status
func status(_, _ int32) int64 { return answer("status") }

//go:wasmexport antler_task_cancel
func cancel(_, _ int32) int64 { return answer("cancel") }

func main() {}
