// Command rawnoalloc is a test guest, written without the SDK, that lacks
// the antler_alloc export: the host must refuse to load it.
package main

import "github.com/antler-mcp/antler/abi"

//go:wasmexport antler_abi_version
func version() int32 { return abi.PackVersion(abi.Major, abi.Minor) }

//go:wasmexport antler_features
func features() int64 { return int64(abi.FeatureIntercept) }

//go:wasmexport antler_intercept
func intercept(ptr, length int32) int64 { return 0 }

func main() {}
