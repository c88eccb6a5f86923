package wasm_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/wasm"
)

// The benchmarks use the tenantheader example, a realistic plugin (it links
// encoding/json).
const exampleGuest = "../../examples/plugins/tenantheader"

// BenchmarkInstantiate measures a new instance: instantiation with a fresh
// linear memory and the Go runtime's _initialize, plus one call. A per-user
// module with a new user on every iteration makes one new instance per call
// (beyond 256 users, each new pool also closes an evicted idle instance).
func BenchmarkInstantiate(b *testing.B) {
	code := readWasm(b, exampleGuest)
	m, err := sharedRuntime(b).Load(context.Background(), code, wasm.ModuleOptions{Name: "tenantheader", PerUser: true})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	var enc abi.Encoder
	(&abi.InterceptRequest{Tool: "t"}).Encode(&enc)
	in := enc.Bytes()
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := m.Call(ctx, abi.ExportIntercept, "user-"+strconv.Itoa(i), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompile measures Runtime.Load of a module new to the runtime:
// cold compiles it; cached reads the compiled code from a warm CacheDir.
// Both include what Load does after compiling (one instance with
// _initialize, the ABI version and features calls): see
// BenchmarkInstantiate for that part.
func BenchmarkCompile(b *testing.B) {
	code := readWasm(b, exampleGuest)
	ctx := context.Background()
	loadOnce := func(b *testing.B, dir string) {
		rt, err := wasm.NewRuntime(wasm.RuntimeOptions{CacheDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		m, err := rt.Load(ctx, code, wasm.ModuleOptions{Name: "tenantheader"})
		if err != nil {
			b.Fatal(err)
		}
		m.Close()
		if err := rt.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			loadOnce(b, "")
		}
	})
	b.Run("cached", func(b *testing.B) {
		dir := b.TempDir()
		loadOnce(b, dir)
		b.ReportAllocs()
		for b.Loop() {
			loadOnce(b, dir)
		}
	})
}

// BenchmarkCall measures Module.Call alone with a 1 KiB request (no plugin
// layer): write into the guest, run antler_intercept, copy the answer out.
func BenchmarkCall(b *testing.B) {
	code := readWasm(b, exampleGuest)
	m, err := sharedRuntime(b).Load(context.Background(), code, wasm.ModuleOptions{Name: "tenantheader"})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	req := &abi.InterceptRequest{Tool: "t", Secrets: []abi.Header{{Name: "tenant", Value: "tnt_1"}}}
	var enc abi.Encoder
	for pad := 0; len(enc.Bytes()) < 1024; pad++ {
		req.Arguments = make([]byte, pad)
		enc.Reset()
		req.Encode(&enc)
	}
	in := enc.Bytes()
	ctx := context.Background()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Call(ctx, abi.ExportIntercept, "", in); err != nil {
			b.Fatal(err)
		}
	}
}
