// Command rawversion is a test guest, written without the SDK, that claims
// plugin ABI 2.0: the host must refuse to load it.
package main

import (
	"unsafe"

	"github.com/antler-mcp/antler/abi"
)

var buf []byte

//go:wasmexport antler_abi_version
func version() int32 { return abi.PackVersion(2, 0) }

//go:wasmexport antler_features
func features() int64 { return int64(abi.FeatureIntercept) }

//go:wasmexport antler_alloc
func alloc(size int32) int32 {
	buf = make([]byte, size)
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
}

//go:wasmexport antler_intercept
func intercept(ptr, length int32) int64 { return 0 }

func main() {}
