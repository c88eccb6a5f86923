// Command extismguest is an Antler interceptor written by hand against the
// Extism import module (extism:host/env), as an Extism PDK would build it:
// the test that Antler's "extism" carrier runs such modules. It sets
// X-Tenant-Token from the granted "tenant" secret.
package main

import (
	"encoding/binary"

	"github.com/antler-mcp/antler/abi"
)

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(offset uint64) uint32

//go:wasmimport extism:host/env input_load_u64
func inputLoadU64(offset uint64) uint64

//go:wasmimport extism:host/env store_u64
func storeU64(offset uint64, v uint64)

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(offset uint64, v uint32)

//go:wasmimport extism:host/env output_set
func outputSet(offset, n uint64)

// input reads the request eight bytes per kernel call (Extism's own PDKs
// do the same), then the tail byte by byte.
func input() []byte {
	n := inputLength()
	b := make([]byte, n)
	i := uint64(0)
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], inputLoadU64(i))
	}
	for ; i < n; i++ {
		b[i] = byte(inputLoadU8(i))
	}
	return b
}

func output(b []byte) {
	n := uint64(len(b))
	off := alloc(n)
	i := uint64(0)
	for ; i+8 <= n; i += 8 {
		storeU64(off+i, binary.LittleEndian.Uint64(b[i:]))
	}
	for ; i < n; i++ {
		storeU8(off+i, uint32(b[i]))
	}
	outputSet(off, n)
}

//go:wasmexport antler_info
func info() int32 {
	var e abi.Encoder
	i := abi.Info{Major: abi.Major, Minor: abi.Minor, Features: abi.FeatureIntercept}
	i.Encode(&e)
	output(e.Bytes())
	return 0
}

//go:wasmexport antler_intercept
func intercept() int32 {
	var req abi.InterceptRequest
	if err := req.Decode(input()); err != nil {
		return 1
	}
	resp := abi.InterceptResponse{Action: abi.ActionDeny, Message: "no tenant secret"}
	for _, s := range req.Secrets {
		if s.Name == "tenant" {
			resp = abi.InterceptResponse{SetHeaders: []abi.Header{{Name: "X-Tenant-Token", Value: s.Value}}}
		}
	}
	var e abi.Encoder
	resp.Encode(&e)
	output(e.Bytes())
	return 0
}

func main() {}
