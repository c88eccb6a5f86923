//go:build wasip1

package main

import (
	"unsafe"

	"github.com/antler-mcp/antler/abi"
)

var buf []byte

//go:wasmexport antler_abi_version
func version() int32 { return abi.PackVersion(1, 1) }

//go:wasmexport antler_features
func features() int64 { return int64(abi.FeatureTaskDriver | abi.FeatureTaskAnswer) }

//go:wasmexport antler_alloc
func alloc(size int32) int32 {
	buf = make([]byte, size)
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
}

//go:wasmexport antler_task_submit
func submit(_, _ int32) int64 { return 0 }

//go:wasmexport antler_task_status
func status(_, _ int32) int64 { return 0 }

//go:wasmexport antler_task_cancel
func cancel(_, _ int32) int64 { return 0 }
