package wasm

import (
	"errors"
	"fmt"

	"github.com/antler-mcp/antler/internal/wasmbin"
)

// tableEntryBytes is what the runtime holds on the Go heap for each entry
// of a module's tables, outside the module's linear memory.
const tableEntryBytes = 8

// BoundTables returns code with every table it defines given a maximum
// within maxBytes of host memory, all tables together: a table declared
// without one could grow, by one table.grow, to 2³²−1 entries the runtime
// holds on the host's heap, past the memory limit that bounds everything
// else a module has. A table that already starts above the bound is
// refused. Everything but the table section is returned as it came; so is
// code with no table to bound, or that is not a module at all (compiling it
// says so).
func BoundTables(code []byte, maxBytes uint64) ([]byte, error) {
	const header = 8 // magic and version
	if len(code) < header || string(code[:4]) != "\x00asm" {
		return code, nil
	}
	for i := header; i < len(code); {
		id := code[i]
		size, n, err := readLEB(code, i+1)
		if err != nil {
			return nil, fmt.Errorf("not a valid WebAssembly module: section at byte %d: %w", i, err)
		}
		start := i + 1 + n
		end := start + int(size)
		if uint64(end) > uint64(len(code)) || end < start {
			return nil, fmt.Errorf("not a valid WebAssembly module: section at byte %d runs past the end", i)
		}
		if id == sectionTable {
			body, err := boundTableSection(code[start:end], maxBytes)
			if err != nil {
				if errors.Is(err, errTableTooLarge) {
					return nil, err
				}
				return nil, fmt.Errorf("not a valid WebAssembly module: %w", err)
			}
			out := make([]byte, 0, len(code)+len(body)-int(size)+5)
			out = append(out, code[:i]...)
			out = append(out, sectionTable)
			out = wasmbin.AppendULEB(out, uint64(len(body)))
			out = append(out, body...)
			return append(out, code[end:]...), nil
		}
		i = end
	}
	return code, nil
}

// errTableTooLarge is a table that starts above the module's limit.
var errTableTooLarge = errors.New("the module's tables are too large")

// sectionTable is the table section's id.
const sectionTable = 4

// boundTableSection re-encodes a table section's body with each table's
// maximum at most its share of maxBytes.
func boundTableSection(body []byte, maxBytes uint64) ([]byte, error) {
	count, i, err := readLEB(body, 0)
	if err != nil {
		return nil, fmt.Errorf("table section: %w", err)
	}
	if count == 0 {
		return body, nil
	}
	share := maxBytes / tableEntryBytes / count
	out := wasmbin.AppendULEB(make([]byte, 0, len(body)+int(count)*5), count)
	for t := uint64(0); t < count; t++ {
		if i+2 > len(body) {
			return nil, errors.New("table section: a table runs past the end")
		}
		refType, flags := body[i], body[i+1]
		i += 2
		if flags > 1 {
			return nil, fmt.Errorf("table %d: limits of kind %#x are not supported", t, flags)
		}
		min, n, err := readLEB(body, i)
		if err != nil {
			return nil, fmt.Errorf("table %d: %w", t, err)
		}
		i += n
		max := share
		if flags == 1 {
			declared, n, err := readLEB(body, i)
			if err != nil {
				return nil, fmt.Errorf("table %d: %w", t, err)
			}
			i += n
			max = minU(declared, share)
		}
		if min > share {
			return nil, fmt.Errorf("%w: table %d starts with %d entries, over the %d its memory limit allows (%d bytes each)", errTableTooLarge, t, min, share, tableEntryBytes)
		}
		out = append(out, refType, 1)
		out = wasmbin.AppendULEB(wasmbin.AppendULEB(out, min), max)
	}
	if i != len(body) {
		return nil, errors.New("table section: bytes after the last table")
	}
	return out, nil
}

func minU(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

// readLEB reads an unsigned 32-bit LEB128 at b[i], returning its value and
// length.
func readLEB(b []byte, i int) (uint64, int, error) {
	var v uint64
	for n := 0; n < 5; n++ {
		if i+n >= len(b) {
			return 0, 0, errors.New("a number runs past the end")
		}
		c := b[i+n]
		v |= uint64(c&0x7f) << (7 * n)
		if c < 0x80 {
			if v > 1<<32-1 {
				return 0, 0, errors.New("a number over 32 bits")
			}
			return v, n + 1, nil
		}
	}
	return 0, 0, errors.New("a number over 5 bytes")
}
