package plugins_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/eventually"
	"github.com/antler-mcp/antler/internal/interceptor"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/wasm"
	"github.com/antler-mcp/antler/internal/wasmbin"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

const mib = 1 << 20

// hostileCase is one attack by an Extism guest on the host that runs it.
type hostileCase struct {
	name    string
	timeout time.Duration // the entry's timeout_ms (0: the default)
	memMB   int           // the entry's max_memory_mb (0: the default)
	// module returns the plugin file (default: testdata/extismhostile).
	module func(t *testing.T) string
	// heap: the case measures the process's heap, so it runs alone.
	heap bool
	run  func(t *testing.T, p *plugins.Plugin)
}

// TestExtismHostileGuest loads a hostile Extism module the way Antler does
// (host.Load, kind "extism", with the entry's limits) and performs each
// attack an Extism guest has: what its kernel imports, Extism's own host
// functions (http_request, var_set, error_set) and WASI offer, and what a
// Wasm module can do on its own (loop, memory.grow, table.grow, answer
// garbage). Each must leave the host unharmed and usable, and a call it
// spoils must fail closed: the upstream sees nothing. Cases that measure
// the heap run one at a time; the others run in parallel afterwards.
func TestExtismHostileGuest(t *testing.T) {
	for _, tc := range []hostileCase{{
		// The manifest's timeout closes the instance mid-loop (wazero's
		// close-on-context-done); the pool makes a new one.
		name: "an infinite loop ends at the plugin's timeout", timeout: 200 * time.Millisecond,
		run: func(t *testing.T, p *plugins.Plugin) {
			ok(t, p, "")
			for range 2 {
				began := time.Now()
				err := fails(t, p, "loop", "")
				elapsed := time.Since(began)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("the loop was not stopped by the plugin's deadline: %v (%v)", err, errors.Unwrap(err))
				}
				if ce := (*wasm.CallError)(nil); !errors.As(err, &ce) || ce.Kind != "timeout" {
					t.Errorf("the loop's failure is %v, want a CallError of kind timeout", err)
				}
				t.Logf("infinite loop stopped after %v: %v (%v)", elapsed, err, errors.Unwrap(err))
				assertFresh(t, p)
			}
			// The caller's own deadline interrupts the guest too.
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			_, err := p.Intercept(ctx, "u", &abi.InterceptRequest{Tool: "loop"})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("with the caller's deadline: %v", err)
			}
			assertFresh(t, p)
			assertFailsClosed(t, p, "loop", "")
		},
	}, {
		// Extism's kernel allocates in a memory of its own, held to the
		// same limit as the guest's: past it alloc answers 0 (the kernel's
		// "allocation failed", which the guest may answer through), and
		// the host holds no more. An instance holds at most both memories
		// full: the same instance, bombing its own memory next, dies.
		name: "an allocation bomb through the kernel's alloc stops at max_memory_mb", memMB: 16, timeout: 30 * time.Second, heap: true,
		run: func(t *testing.T, p *plugins.Plugin) {
			ok(t, p, "") // the instance and its memories exist before the measure
			before := heapInUse(true)
			resp := ok(t, p, "alloc-bomb")
			peak := heapInUse(false)
			got, err := strconv.Atoi(header(resp, "X-Allocated-MiB"))
			if err != nil {
				t.Fatalf("the guest's report: %+v", resp)
			}
			t.Logf("the guest got %d of the 512 MiB it asked the kernel for; host heap %d MiB before, %d MiB right after", got, before/mib, peak/mib)
			if got >= 16 {
				t.Errorf("the kernel gave a guest limited to 16 MiB %d MiB", got)
			}
			if n := header(resp, "X-Count"); n != "2" {
				t.Fatalf("the bomb ran on an instance's call %s, want the measured instance's second", n)
			}
			err = fails(t, p, "grow-bomb", "")
			peak = max(peak, heapInUse(false))
			t.Logf("then %v; host heap peaked at %d MiB", err, peak/mib)
			if peak > before+256*mib {
				t.Errorf("the host heap grew from %d to %d MiB", before/mib, peak/mib)
			}
			released(t, before)
			assertFresh(t, p)
		},
	}, {
		// Go's allocator grows the guest's memory with memory.grow until
		// the limit refuses; the Go runtime then dies, and the call with it.
		name: "an allocation bomb through memory.grow stops at max_memory_mb", memMB: 16, timeout: 30 * time.Second, heap: true,
		run: func(t *testing.T, p *plugins.Plugin) {
			ok(t, p, "")
			before := heapInUse(true)
			err := fails(t, p, "grow-bomb", "")
			peak := heapInUse(false)
			t.Logf("%v (%v); host heap %d MiB before, %d MiB right after", err, errors.Unwrap(err), before/mib, peak/mib)
			if peak > before+256*mib {
				t.Errorf("the host heap grew from %d to %d MiB", before/mib, peak/mib)
			}
			released(t, before)
			assertFresh(t, p)
		},
	}, {
		// wasm.BoundTables gives the module's table a maximum within the
		// limit: the grow of 2²⁵ entries (256 MiB of host heap) fails in
		// the guest, which then answers "continue" (it denies if it grew).
		name: "table.grow stays within max_memory_mb", memMB: 1, timeout: 30 * time.Second, heap: true,
		module: func(t *testing.T) string {
			path := filepath.Join(t.TempDir(), "tablegrow.wasm")
			if err := os.WriteFile(path, extismTableGrowGuest(1<<25), 0o644); err != nil {
				t.Fatal(err)
			}
			return path
		},
		run: func(t *testing.T, p *plugins.Plugin) {
			before := heapInUse(true)
			for i := range 2 {
				resp, err := p.Intercept(context.Background(), "u", &abi.InterceptRequest{Tool: "x"})
				if err != nil {
					t.Fatalf("call %d: %v (%v)", i+1, err, errors.Unwrap(err))
				}
				if resp.Action != abi.ActionContinue {
					t.Errorf("call %d: %+v (a denial means the table grew)", i+1, resp)
				}
			}
			if grew := int64(heapInUse(true)) - int64(before); grew > 16*mib {
				t.Errorf("a guest limited to 1 MiB made the host hold %d MiB more heap with table.grow", grew/mib)
			}
		},
	}, {
		// A panic (Go's runtime aborts with an unreachable trap), error_set
		// beside an answer that allows, and a failing status beside one:
		// each is a failure.
		name: "a trap or error_set fails closed",
		run: func(t *testing.T, p *plugins.Plugin) {
			for _, tool := range []string{"panic", "error-set", "status"} {
				err := fails(t, p, tool, "")
				t.Logf("%s: %v (%v)", tool, err, errors.Unwrap(err))
				assertFresh(t, p)
				assertFailsClosed(t, p, tool, "")
			}
		},
	}, {
		// The manifest allows no host: http_request traps before it
		// dials.
		name: "http_request reaches no server",
		run: func(t *testing.T, p *plugins.Plugin) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				_, _ = w.Write([]byte("reached"))
			}))
			defer srv.Close()
			for _, target := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
				err := fails(t, p, "http", target)
				t.Logf("%s: %v (%v)", target, err, errors.Unwrap(err))
				assertFailsClosed(t, p, "http", target)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("the server got %d requests from the guest", n)
			}
			// The server counts a request that does reach it.
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if n := hits.Load(); n != 1 {
				t.Errorf("the server counted %d requests after the test's own", n)
			}
		},
	}, {
		// WASI is on, with no folder mounted: a host file is out of reach.
		name: "WASI reaches no host file",
		run: func(t *testing.T, p *plugins.Plugin) {
			dir := t.TempDir()
			secret := filepath.Join(dir, "secret.txt")
			if err := os.WriteFile(secret, []byte("hunter2-secret"), 0o600); err != nil {
				t.Fatal(err)
			}
			resp := ok(t, p, "fs", secret)
			for _, h := range resp.SetHeaders {
				t.Logf("%s: %q", h.Name, h.Value)
				if strings.Contains(h.Value, "hunter2") {
					t.Errorf("%s carries the host file's content", h.Name)
				}
			}
			for _, name := range []string{"X-Read", "X-List", "X-Write"} {
				if v := header(resp, name); v != "" {
					t.Errorf("the guest succeeded: %s = %q", name, v)
				}
				if header(resp, name+"-Error") == "" {
					t.Errorf("no %s-Error reported", name)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "planted")); err == nil {
				t.Error("the guest wrote a host file")
			}
		},
	}, {
		// MaxVarBytes 0 disables vars: alice's var_set of 1 MiB traps, and
		// bob's calls find nothing, on a new instance or the one the pool
		// kept (instances serve every user, last in first out).
		name: "var_set keeps no state for the next user",
		run: func(t *testing.T, p *plugins.Plugin) {
			ctx := context.Background()
			ok(t, p, "")
			if resp, err := p.Intercept(ctx, "alice", &abi.InterceptRequest{Tool: "var-set", UserID: "alice", Headers: []abi.Header{{Name: "X-Target", Value: "alice's secret"}}}); err == nil {
				t.Errorf("var_set of 1 MiB succeeded: %+v", resp)
			} else {
				t.Logf("var-set: %v (%v)", err, errors.Unwrap(err))
			}
			assertFailsClosed(t, p, "var-set", "alice's secret")
			for range 2 { // the second call is on the instance the first kept
				resp, err := p.Intercept(ctx, "bob", &abi.InterceptRequest{Tool: "var-get", UserID: "bob"})
				if err != nil {
					t.Fatal(err)
				}
				if v := header(resp, "X-Var"); v != "" {
					t.Errorf("bob's call read a var: %q", v)
				}
			}
		},
	}, {
		// Bytes that are no answer, an unknown action and an answer past
		// abi.MaxMessageBytes are malformed: the call fails, the instance
		// goes. (32 MiB: the kernel's memory must hold the 16 MiB answer.)
		name: "a malformed or huge answer fails closed", memMB: 32,
		run: func(t *testing.T, p *plugins.Plugin) {
			for _, tool := range []string{"garbage", "truncated", "action", "huge"} {
				err := fails(t, p, tool, "")
				var ce *wasm.CallError
				if !errors.As(err, &ce) || ce.Kind != "malformed" {
					t.Errorf("%s: %v, want a malformed answer", tool, err)
				}
				t.Logf("%s: %v (%v)", tool, err, errors.Unwrap(err))
				assertFresh(t, p)
				assertFailsClosed(t, p, tool, "")
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.heap {
				t.Parallel()
			}
			path := ""
			if tc.module != nil {
				path = tc.module(t)
			} else {
				path = plugintest.BuildWasm(t, "testdata/extismhostile")
			}
			tc.run(t, loadExtism(t, path, tc.timeout, tc.memMB))
		})
	}
}

// loadExtism loads path as Antler loads an extism entry with these limits.
func loadExtism(t *testing.T, path string, timeout time.Duration, memMB int) *plugins.Plugin {
	t.Helper()
	host, err := plugins.NewHost("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(context.Background()) })
	p, err := host.Load(context.Background(), plugins.Entry{
		Name: "hostile", Kind: plugins.KindExtism, Path: path, Timeout: timeout, MaxMemoryMB: memMB,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func request(tool, target string) *abi.InterceptRequest {
	return &abi.InterceptRequest{Server: "s", Tool: tool, UserID: "u", Headers: []abi.Header{{Name: "X-Target", Value: target}}}
}

// ok runs an intercept that must succeed.
func ok(t *testing.T, p *plugins.Plugin, tool string, target ...string) abi.InterceptResponse {
	t.Helper()
	resp, err := p.Intercept(context.Background(), "u", request(tool, strings.Join(target, "")))
	if err != nil {
		t.Fatalf("%s: %v (%v)", tool, err, errors.Unwrap(err))
	}
	return resp
}

// fails runs an intercept that must fail with an error naming the plugin.
func fails(t *testing.T, p *plugins.Plugin, tool, target string) error {
	t.Helper()
	resp, err := p.Intercept(context.Background(), "u", request(tool, target))
	if err == nil {
		t.Fatalf("%s succeeded: %+v", tool, resp)
	}
	if !strings.Contains(err.Error(), "hostile") {
		t.Errorf("%s: the error does not name the plugin: %v", tool, err)
	}
	return err
}

// assertFresh checks that the next call is served, by a new instance.
func assertFresh(t *testing.T, p *plugins.Plugin) {
	t.Helper()
	if n := header(ok(t, p, ""), "X-Count"); n != "1" {
		t.Errorf("the call after a failure was an instance's call %s, want a fresh instance's first", n)
	}
}

// assertFailsClosed runs tool through the plugin's layer of the tool-call
// chain: the call must be denied with the plugin's failure message and
// never reach the upstream.
func assertFailsClosed(t *testing.T, p *plugins.Plugin, tool, target string) {
	t.Helper()
	reached := false
	upstream := func(context.Context, *interceptor.Request) (json.RawMessage, error) {
		reached = true
		return json.RawMessage(`{"content":[]}`), nil
	}
	_, err := interceptor.FromPlugin(p).Intercept(context.Background(), &interceptor.Request{
		Server: &config.Server{Name: "s"}, Tool: tool, ExposedName: tool, UserID: "u",
		Headers: map[string]string{"X-Target": target},
	}, upstream)
	if d, denied := interceptor.IsDenied(err); !denied || d.Message != p.FailureMessage() {
		t.Errorf("%s through the chain: %v, want the plugin's failure", tool, err)
	}
	if reached {
		t.Errorf("%s: the call reached the upstream", tool)
	}
}

func header(resp abi.InterceptResponse, name string) string {
	for _, h := range resp.SetHeaders {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

// heapInUse is the process's heap in use, after a collection if collect.
func heapInUse(collect bool) uint64 {
	if collect {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// released waits until the heap, once collected, is back within 8 MiB of
// before: a discarded instance's memories must become garbage. (Not at
// once: wazero watches each call's context on a goroutine that holds the
// module until it next runs.)
func released(t *testing.T, before uint64) {
	t.Helper()
	eventually.Check(t, "the discarded instance's memories to be collected", func() (bool, string) {
		heap := heapInUse(true)
		return heap <= before+8*mib, fmt.Sprintf("heap %d MiB once collected, %d MiB before the bomb", heap/mib, before/mib)
	})
}

// extismTableGrowGuest is an Extism module written in raw Wasm: antler_info
// answers an interceptor's Info; antler_intercept grows an unbounded
// funcref table by delta entries and answers "continue" if the grow failed,
// a denial if it succeeded. Its only imports are Extism kernel functions.
func extismTableGrowGuest(delta uint32) []byte {
	var info, deny abi.Encoder
	(&abi.Info{Major: abi.Major, Minor: abi.Minor, Features: abi.FeatureIntercept}).Encode(&info)
	(&abi.InterceptResponse{Action: abi.ActionDeny, Message: "the table grew"}).Encode(&deny)
	// output stores b in a kernel block (its offset in local 0) and sets it
	// as the call's output.
	output := func(b []byte) []byte {
		code := append([]byte{0x42}, wasmbin.SLEB(int64(len(b)))...) // i64.const len
		code = append(code, 0x10, 0x00, 0x21, 0x00)                  // call alloc; local.set 0
		for i, c := range b {
			code = append(code, 0x20, 0x00, 0x42) // local.get 0; i64.const i
			code = append(code, wasmbin.SLEB(int64(i))...)
			code = append(code, 0x7c, 0x41) // i64.add; i32.const c
			code = append(code, wasmbin.SLEB(int64(c))...)
			code = append(code, 0x10, 0x01) // call store_u8
		}
		code = append(code, 0x20, 0x00, 0x42) // local.get 0; i64.const len
		code = append(code, wasmbin.SLEB(int64(len(b)))...)
		return append(code, 0x10, 0x02) // call output_set
	}
	imp := func(field string, typ byte) []byte {
		return append(append(wasmbin.Name("extism:host/env"), wasmbin.Name(field)...), 0x00, typ)
	}
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, wasmbin.Section(1, wasmbin.Vec(
		[]byte{0x60, 0x01, 0x7e, 0x01, 0x7e}, // 0: (i64) -> i64
		[]byte{0x60, 0x02, 0x7e, 0x7f, 0x00}, // 1: (i64, i32) -> ()
		[]byte{0x60, 0x02, 0x7e, 0x7e, 0x00}, // 2: (i64, i64) -> ()
		[]byte{0x60, 0x00, 0x01, 0x7f},       // 3: () -> i32
	))...)
	m = append(m, wasmbin.Section(2, wasmbin.Vec(imp("alloc", 0), imp("store_u8", 1), imp("output_set", 2)))...)
	m = append(m, wasmbin.Section(3, wasmbin.Vec([]byte{3}, []byte{3}))...)
	m = append(m, wasmbin.Section(4, wasmbin.Vec([]byte{0x70, 0x00, 0x00}))...) // table funcref min 0, no max
	m = append(m, wasmbin.Section(7, wasmbin.Vec(
		append(wasmbin.Name("antler_info"), 0x00, 0x03),
		append(wasmbin.Name("antler_intercept"), 0x00, 0x04),
	))...)
	infoCode := append(output(info.Bytes()), 0x41, 0x00)                           // i32.const 0
	grow := append([]byte{0xd0, 0x70, 0x41}, wasmbin.SLEB(int64(int32(delta)))...) // ref.null func; i32.const delta
	grow = append(grow, 0xfc, 0x0f, 0x00, 0x41, 0x7f, 0x47, 0x04, 0x40)            // table.grow 0; i32.const -1; i32.ne; if
	grow = append(append(grow, output(deny.Bytes())...), 0x0b, 0x41, 0x00)         // end; i32.const 0
	m = append(m, wasmbin.Section(10, wasmbin.Vec(wasmbin.Func(wasmbin.OneI64Local, infoCode), wasmbin.Func(wasmbin.OneI64Local, grow)))...)
	return m
}
