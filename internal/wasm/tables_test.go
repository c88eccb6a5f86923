package wasm_test

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/wasm"
	"github.com/antler-mcp/antler/internal/wasmbin"
)

// tableGrowGuest is a raw ABI 1 interceptor, no SDK: its antler_intercept
// grows an unbounded funcref table by delta entries (table.grow, a
// reference-types instruction wazero enables by default) and answers
// "continue". It touches no linear memory beyond one page.
func tableGrowGuest(delta uint32) []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, wasmbin.Section(1, wasmbin.Vec(
		[]byte{0x60, 0x00, 0x01, 0x7f},             // 0: () -> i32
		[]byte{0x60, 0x00, 0x01, 0x7e},             // 1: () -> i64
		[]byte{0x60, 0x01, 0x7f, 0x01, 0x7f},       // 2: (i32) -> i32
		[]byte{0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7e}, // 3: (i32, i32) -> i64
	))...)
	m = append(m, wasmbin.Section(3, wasmbin.Vec([]byte{0}, []byte{1}, []byte{2}, []byte{3}))...)
	m = append(m, wasmbin.Section(4, wasmbin.Vec([]byte{0x70, 0x00, 0x00}))...) // table funcref min 0, no max
	m = append(m, wasmbin.Section(5, wasmbin.Vec([]byte{0x00, 0x01}))...)       // memory min 1 page
	m = append(m, wasmbin.Section(7, wasmbin.Vec(
		append(wasmbin.Name("memory"), 0x02, 0x00),
		append(wasmbin.Name(abi.ExportVersion), 0x00, 0x00),
		append(wasmbin.Name(abi.ExportFeatures), 0x00, 0x01),
		append(wasmbin.Name(abi.ExportAlloc), 0x00, 0x02),
		append(wasmbin.Name(abi.ExportIntercept), 0x00, 0x03),
	))...)
	version := append([]byte{0x41}, wasmbin.SLEB(int64(abi.PackVersion(abi.Major, abi.Minor)))...)
	features := append([]byte{0x42}, wasmbin.SLEB(int64(abi.FeatureIntercept))...)
	alloc := append([]byte{0x41}, wasmbin.SLEB(1024)...)
	grow := []byte{0xd0, 0x70, 0x41} // ref.null func; i32.const delta
	grow = append(grow, wasmbin.SLEB(int64(int32(delta)))...)
	grow = append(grow, 0xfc, 0x0f, 0x00, 0x1a, 0x42, 0x00) // table.grow 0; drop; i64.const 0
	m = append(m, wasmbin.Section(10, wasmbin.Vec(wasmbin.Func(wasmbin.NoLocals, version), wasmbin.Func(wasmbin.NoLocals, features), wasmbin.Func(wasmbin.NoLocals, alloc), wasmbin.Func(wasmbin.NoLocals, grow)))...)
	return m
}

// TestTableGrowIsBoundedByTheMemoryLimit performs a guest's table.grow of
// 2²⁵ entries: max_memory_mb bounded only linear memory, and the runtime
// held 8 bytes of host heap per table entry (2³² of them were one
// instruction away), kept by the idle instance the pool reused. The table
// now has a maximum within the limit, so the grow fails inside the guest
// and the host's heap stays where it was.
func TestTableGrowIsBoundedByTheMemoryLimit(t *testing.T) {
	const (
		mib   = 1 << 20
		limit = 1               // MiB of linear memory allowed
		delta = uint32(1 << 25) // 32 Mi entries = 256 MiB of host heap
	)
	m, err := sharedRuntime(t).Load(context.Background(), tableGrowGuest(delta), wasm.ModuleOptions{Name: "tablegrow", MaxMemoryMB: limit, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	for i := range 2 {
		if _, err := intercept(context.Background(), m, "", &abi.InterceptRequest{Tool: "x"}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if grew := int64(ms.HeapInuse) - int64(before); grew > 16*mib {
		t.Errorf("a guest limited to %d MiB made the host hold %d MiB more heap with table.grow", limit, grew/mib)
	}
}

// TestBoundTables: each table defined gets a maximum within its share of
// the limit (8 bytes an entry); a declared maximum above it is lowered, one
// below it kept; a table that starts above it is refused; a module without
// tables and malformed sections are reported, never a panic.
func TestBoundTables(t *testing.T) {
	const limit = 8 * 1000 // bytes: 1,000 entries in all
	module := func(tables ...[]byte) []byte {
		return append([]byte("\x00asm\x01\x00\x00\x00"), wasmbin.Section(4, wasmbin.Vec(tables...))...)
	}
	table := func(min uint64, max ...uint64) []byte {
		if len(max) == 0 {
			return append([]byte{0x70, 0x00}, wasmbin.ULEB(min)...)
		}
		return append(append([]byte{0x70, 0x01}, wasmbin.ULEB(min)...), wasmbin.ULEB(max[0])...)
	}
	for _, tc := range []struct {
		name    string
		in, out []byte
		err     string
	}{
		{"no maximum", module(table(10)), module(table(10, 1000)), ""},
		{"a maximum above the share", module(table(10, 1<<32-1)), module(table(10, 1000)), ""},
		{"a maximum within it", module(table(10, 20)), module(table(10, 20)), ""},
		{"two tables share the limit", module(table(1), table(2, 900)), module(table(1, 500), table(2, 500)), ""},
		{"a table starting above it", module(table(1001)), nil, "table 0 starts with 1001 entries"},
		{"no table section", []byte("\x00asm\x01\x00\x00\x00"), []byte("\x00asm\x01\x00\x00\x00"), ""},
		{"64-bit limits", module([]byte{0x70, 0x04, 0x01}), nil, "not supported"},
		{"a cut table", append([]byte("\x00asm\x01\x00\x00\x00"), wasmbin.Section(4, []byte{0x01, 0x70})...), nil, "runs past the end"},
		{"a section past the end", []byte("\x00asm\x01\x00\x00\x00\x04\x7f"), nil, "runs past the end"},
		{"a number over 32 bits", module(append([]byte{0x70, 0x00}, wasmbin.ULEB(1<<33)...)), nil, "over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := wasm.BoundTables(tc.in, limit)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err == "" && !bytes.Equal(out, tc.out):
				t.Fatalf("got % x\nwant % x", out, tc.out)
			}
		})
	}
}

// FuzzBoundTables: any input is bounded or refused without a panic, and a
// bounded module is bounded again unchanged.
func FuzzBoundTables(f *testing.F) {
	f.Add(tableGrowGuest(1))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x04\x04\x01\x70\x00\x05"))
	f.Fuzz(func(t *testing.T, code []byte) {
		out, err := wasm.BoundTables(code, 1<<20)
		if err != nil {
			return
		}
		again, err := wasm.BoundTables(out, 1<<20)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("bounding a bounded module: %v, changed: %v", err, !bytes.Equal(again, out))
		}
	})
}
