// Package wasmbin writes the pieces of a WebAssembly binary module: the
// LEB128 numbers, sections, vectors, names and function bodies of the
// binary format. Tests use it to assemble modules no compiler emits (a
// guest that grows a table without bound, one that calls Extism's kernel
// directly), and the wasm package to rewrite a module's limits.
package wasmbin

// AppendULEB appends v as unsigned LEB128.
func AppendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		if v >>= 7; v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// ULEB is v as unsigned LEB128.
func ULEB(v uint64) []byte { return AppendULEB(nil, v) }

// SLEB is v as signed LEB128 (the immediate of i32.const and i64.const).
func SLEB(v int64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// Section is the section with id and body.
func Section(id byte, body []byte) []byte {
	return append(append([]byte{id}, ULEB(uint64(len(body)))...), body...)
}

// Vec is a vector of the encoded items.
func Vec(items ...[]byte) []byte {
	out := ULEB(uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

// Name is s as a name (its length, then its bytes).
func Name(s string) []byte { return append(ULEB(uint64(len(s))), s...) }

// NoLocals and OneI64Local are the locals of a function body: none, or one
// i64 (local 0).
const (
	NoLocals    = "\x00"
	OneI64Local = "\x01\x01\x7e"
)

// Func is a code section entry: its size, locals, code and end.
func Func(locals string, code []byte) []byte {
	body := append(append([]byte(locals), code...), 0x0b)
	return append(ULEB(uint64(len(body))), body...)
}
