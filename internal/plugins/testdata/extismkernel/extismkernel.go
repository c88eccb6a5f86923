// Package extismkernel is what the test guests written by hand against
// Extism's import module (extism:host/env) share: reading the call's input
// and setting its output through the kernel, eight bytes per kernel call and
// then the tail byte by byte, as Extism's own PDKs do.
package extismkernel

import "encoding/binary"

//go:wasmimport extism:host/env input_length
func inputLength() uint64

//go:wasmimport extism:host/env input_load_u8
func inputLoadU8(offset uint64) uint32

//go:wasmimport extism:host/env input_load_u64
func inputLoadU64(offset uint64) uint64

//go:wasmimport extism:host/env alloc
func alloc(n uint64) uint64

//go:wasmimport extism:host/env store_u8
func storeU8(offset uint64, v uint32)

//go:wasmimport extism:host/env store_u64
func storeU64(offset uint64, v uint64)

//go:wasmimport extism:host/env output_set
func outputSet(offset, n uint64)

// Alloc is the kernel's alloc: a new block of n bytes in its memory (0 when
// it has no room).
func Alloc(n uint64) uint64 { return alloc(n) }

// Input is the call's input.
func Input() []byte {
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

// Store copies b into a new block of the kernel's memory and returns its
// offset.
func Store(b []byte) uint64 {
	n := uint64(len(b))
	off := alloc(n)
	i := uint64(0)
	for ; i+8 <= n; i += 8 {
		storeU64(off+i, binary.LittleEndian.Uint64(b[i:]))
	}
	for ; i < n; i++ {
		storeU8(off+i, uint32(b[i]))
	}
	return off
}

// Output sets b as the call's output.
func Output(b []byte) { outputSet(Store(b), uint64(len(b))) }

// StoreU8 writes one byte of the kernel's memory.
func StoreU8(offset uint64, c byte) { storeU8(offset, uint32(c)) }

// SetOutput sets the n bytes at offset of the kernel's memory as the call's
// output.
func SetOutput(offset, n uint64) { outputSet(offset, n) }
