package wasm_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/wasm"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

// assertFresh checks that the next call is served, and by a new instance.
func assertFresh(t *testing.T, m *wasm.Module) {
	t.Helper()
	if got := header(call(t, m, "", "ok"), "X-Count"); got != "1" {
		t.Errorf("the call after a failure was served by an instance that had served %s calls, want a fresh one", got)
	}
}

func TestInfiniteLoopTimesOut(t *testing.T) {
	const timeout = 200 * time.Millisecond
	m := load(t, "hostile", wasm.ModuleOptions{Name: "looper", Timeout: timeout, PoolSize: 1})
	call(t, m, "", "ok") // the instance has served one call
	for range 2 {
		began := time.Now()
		ce := callErr(t, m, "loop")
		elapsed := time.Since(began)
		if ce.Kind != "timeout" {
			t.Errorf("Kind %q, want timeout (%v)", ce.Kind, ce.Err)
		}
		if ce.Plugin != "looper" || !strings.Contains(ce.Error(), "looper") {
			t.Errorf("the error does not name the plugin: %v", ce)
		}
		if elapsed > timeout+2*time.Second {
			t.Errorf("the call returned after %v, want about %v", elapsed, timeout)
		}
		t.Logf("infinite loop stopped after %v (timeout %v): %v", elapsed, timeout, ce.Err)
		assertFresh(t, m)
	}

	// A caller's own deadline interrupts the guest too.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := intercept(ctx, m, "", &abi.InterceptRequest{Tool: "loop"})
	var ce *wasm.CallError
	if !errors.As(err, &ce) || ce.Kind != "timeout" {
		t.Errorf("with the caller's deadline: %v", err)
	}
	if elapsed := time.Since(began); elapsed > timeout+2*time.Second {
		t.Errorf("the caller's deadline stopped the call after %v", elapsed)
	}
	assertFresh(t, m)
}

func TestAllocationBombIsContained(t *testing.T) {
	const (
		mib   = 1 << 20
		limit = 32 // MiB of linear memory per instance
	)
	m := load(t, "hostile", wasm.ModuleOptions{Name: "bomb", MaxMemoryMB: limit, Timeout: 30 * time.Second})
	var ms runtime.MemStats
	collected := func() uint64 {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := collected()
	totalBefore := ms.TotalAlloc
	var peak, retained uint64
	for i := range 5 {
		began := time.Now()
		ce := callErr(t, m, "bomb")
		took := time.Since(began)
		runtime.ReadMemStats(&ms) // before collecting: what the bomb left behind
		inUse := ms.HeapInuse
		peak = max(peak, inUse)
		if ce.Kind != "trap" {
			t.Errorf("bomb %d: Kind %q, want trap (%v)", i, ce.Kind, ce.Err)
		}
		after := collected()
		retained = max(retained, after)
		t.Logf("bomb %d: %v after %v; host heap in use %d MiB, %d MiB once collected", i, ce, took, inUse/mib, after/mib)
		if i == 0 {
			t.Logf("cause: %v", ce.Err)
		}
	}
	t.Logf("host heap in use: %d MiB before, peak %d MiB right after a bomb, at most %d MiB once collected; the 5 bombs allocated %d MiB in all",
		before/mib, peak/mib, retained/mib, (ms.TotalAlloc-totalBefore)/mib)
	// A discarded instance's linear memory (up to the limit) must become
	// garbage at once: nothing in the pool may keep it reachable.
	if retained > before+(limit-12)*mib {
		t.Errorf("a bombed instance's memory stays reachable: heap %d MiB after collection, %d MiB before", retained/mib, before/mib)
	}
	if peak > before+300*mib {
		t.Errorf("the host heap peaked at %d MiB (from %d MiB)", peak/mib, before/mib)
	}
	assertFresh(t, m)
}

func TestPanicFailsClosed(t *testing.T) {
	t.Parallel()
	m := load(t, "hostile", wasm.ModuleOptions{Name: "panicky", PoolSize: 1})

	// A panic in the handler is recovered by the SDK's dispatcher: the
	// answer carries Error (the host fails the call closed) and the
	// instance, still sound, keeps serving.
	call(t, m, "", "ok")
	resp, err := intercept(context.Background(), m, "", &abi.InterceptRequest{Tool: "panic"})
	if err != nil {
		t.Fatalf("a recovered panic should come back as an answer: %v", err)
	}
	if !strings.Contains(resp.Error, "panicked") || resp.Action != abi.ActionContinue || len(resp.SetHeaders) != 0 {
		t.Errorf("answer to a panic: %+v", resp)
	}
	if got := header(call(t, m, "", "ok"), "X-Count"); got != "3" {
		t.Errorf("after a recovered panic the instance had served %s calls, want 3 (kept)", got)
	}

	// A panic the SDK cannot recover (on another goroutine) or an exit
	// kills the instance: the call traps and the next is served fresh.
	for _, tool := range []string{"goroutine-panic", "exit"} {
		ce := callErr(t, m, tool)
		if ce.Kind != "trap" {
			t.Errorf("%s: Kind %q, want trap (%v)", tool, ce.Kind, ce.Err)
		}
		var exit *sys.ExitError
		if errors.As(ce, &exit) {
			t.Logf("%s: guest exit code %d", tool, exit.ExitCode())
		}
		assertFresh(t, m)
	}

	// Through the plugin layer every kind of panic is an error.
	p := loadPlugin(t, "hostile", plugins.Entry{Name: "panicky-plugin"})
	for _, tool := range []string{"panic", "goroutine-panic"} {
		_, err := p.Intercept(context.Background(), "", &abi.InterceptRequest{Tool: tool})
		if err == nil || !strings.Contains(err.Error(), "panicky-plugin") {
			t.Errorf("Plugin.Intercept(%s) = %v, want an error naming the plugin", tool, err)
		}
	}
}

func TestNoHostFilesystem(t *testing.T) {
	t.Parallel()
	_ = os.Remove("/tmp/antler-hostile-guest") // the name the guest tries to create
	m := load(t, "hostile", wasm.ModuleOptions{Name: "snoop", Grants: wasm.Grants{Clock: true, Random: true}})
	resp := call(t, m, "", "fs")
	for _, h := range resp.SetHeaders {
		t.Logf("%s: %q", h.Name, h.Value)
		if strings.Contains(h.Value, "root:") {
			t.Errorf("%s carries host file content: %q", h.Name, h.Value)
		}
	}
	for _, name := range []string{"X-Passwd", "X-Root", "X-Create"} {
		if hasHeader(resp, name) {
			t.Errorf("the guest succeeded: %s = %q", name, header(resp, name))
		}
		if header(resp, name+"-Error") == "" {
			t.Errorf("no %s-Error reported", name)
		}
	}
	if env := header(resp, "X-Env"); env != "" {
		t.Errorf("the guest sees environment variables: %q", env)
	}
	if _, err := os.Stat("/tmp/antler-hostile-guest"); err == nil {
		t.Errorf("the guest created a host file")
	}
}

func TestMalformedAnswers(t *testing.T) {
	t.Parallel()
	m := load(t, "rawout", wasm.ModuleOptions{Name: "rawout", PoolSize: 1})
	okCount := func(t *testing.T, after string) string {
		t.Helper()
		resp := call(t, m, "", "ok")
		if got := header(resp, "X-Raw"); got != "ok" {
			t.Fatalf("after %s: X-Raw %q", after, got)
		}
		return header(resp, "X-Count")
	}
	okCount(t, "nothing")
	for tool, want := range map[string]string{
		"oversize": "answer too large",
		"beyond":   "answer outside memory",
	} {
		ce := callErr(t, m, tool)
		if ce.Kind != "malformed" || ce.Err == nil || ce.Err.Error() != want {
			t.Errorf("%s: Kind %q, cause %v; want malformed, %q", tool, ce.Kind, ce.Err, want)
		}
		if n := okCount(t, tool); n != "1" {
			t.Errorf("after %s the instance was kept (it had served %s calls)", tool, n)
		}
	}
	// antler_alloc misbehaving: a buffer outside memory, or null.
	for size, want := range map[int]string{
		8 << 10: "antler_alloc returned a buffer outside memory",
		2 << 20: "antler_alloc returned null",
	} {
		_, err := intercept(context.Background(), m, "", &abi.InterceptRequest{Tool: "ok", Arguments: make([]byte, size)})
		var ce *wasm.CallError
		if !errors.As(err, &ce) || ce.Kind != "malformed" || ce.Err == nil || ce.Err.Error() != want {
			t.Errorf("request of %d bytes: %v (%v), want malformed, %q", size, err, errors.Unwrap(err), want)
		}
		if n := okCount(t, "an alloc failure"); n != "1" {
			t.Errorf("after an alloc failure the instance was kept (it had served %s calls)", n)
		}
	}
	// A request above the limit is refused before it reaches the guest.
	_, err := m.Call(context.Background(), abi.ExportIntercept, "", make([]byte, abi.MaxMessageBytes+1))
	var ce *wasm.CallError
	if !errors.As(err, &ce) || ce.Kind != "malformed" {
		t.Errorf("oversized request: %v", err)
	}

	// Bytes that are no message: the host copies them out, the plugin layer
	// refuses them.
	p := plugintest.Load(t, "testdata/guests/rawout", plugins.Entry{Name: "rawout-plugin"})
	for _, tool := range []string{"garbage", "truncated", "action", "oversize", "beyond"} {
		resp, err := p.Intercept(context.Background(), "", &abi.InterceptRequest{Tool: tool})
		if err == nil {
			t.Errorf("Plugin.Intercept(%s) = %+v, want an error", tool, resp)
			continue
		}
		if !strings.Contains(err.Error(), "rawout-plugin") {
			t.Errorf("Plugin.Intercept(%s): %v does not name the plugin", tool, err)
		}
		next, nerr := p.Intercept(context.Background(), "", &abi.InterceptRequest{Tool: "ok"})
		if nerr != nil || header(next, "X-Raw") != "ok" {
			t.Fatalf("Plugin.Intercept(ok) after %s = %+v, %v", tool, next, nerr)
		}
		// An instance that answered malformed bytes is discarded
		// (abi/README.md): the next call is a fresh instance's first.
		if n := header(next, "X-Count"); n != "1" {
			t.Errorf("after %s the instance was kept (the next call was its call %s)", tool, n)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	rt := sharedRuntime(t)
	loadErr := func(t *testing.T, name string, code []byte) *wasm.LoadError {
		t.Helper()
		m, err := rt.Load(context.Background(), code, wasm.ModuleOptions{Name: name})
		if err == nil {
			m.Close()
			t.Fatalf("%s loaded", name)
		}
		var le *wasm.LoadError
		if !errors.As(err, &le) {
			t.Fatalf("want a *wasm.LoadError, got %T %v", err, err)
		}
		if le.Name != name || !strings.Contains(le.Error(), name) {
			t.Errorf("the error does not name the module: %v", le)
		}
		t.Logf("%v", le)
		return le
	}
	t.Run("ABI major 2", func(t *testing.T) {
		le := loadErr(t, "future.wasm", guestCode(t, "rawversion"))
		if msg := le.Error(); !strings.Contains(msg, "ABI 2.0") || !strings.Contains(msg, "1.x") {
			t.Errorf("the error does not give both ABI versions: %s", msg)
		}
	})
	t.Run("missing antler_alloc", func(t *testing.T) {
		le := loadErr(t, "noalloc.wasm", guestCode(t, "rawnoalloc"))
		if !strings.Contains(le.Error(), "missing export "+abi.ExportAlloc) {
			t.Errorf("the error does not name the missing export: %v", le)
		}
	})
	t.Run("empty module", func(t *testing.T) {
		le := loadErr(t, "empty.wasm", []byte("\x00asm\x01\x00\x00\x00"))
		if !strings.Contains(le.Error(), "missing export "+abi.ExportVersion) {
			t.Errorf("the error does not name the missing export: %v", le)
		}
	})
	t.Run("not wasm", func(t *testing.T) {
		le := loadErr(t, "notes.txt", []byte("#!/bin/sh\necho this is not WebAssembly\n"))
		if !strings.Contains(le.Error(), "not a valid WebAssembly module") || le.Unwrap() == nil {
			t.Errorf("%v (cause %v)", le, le.Unwrap())
		}
	})
	t.Run("no bytes", func(t *testing.T) {
		loadErr(t, "nothing.wasm", nil)
	})
}

// TestCloseDuringCall closes a module while a call is in flight (as a plugin
// reload does): the call completes, and its instance is closed afterwards
// rather than kept alive in a pool nobody can reach. It is not parallel: it
// measures the process's heap, which parallel tests' modules would grow.
func TestCloseDuringCall(t *testing.T) {
	const mib = 1 << 20
	entered, release := make(chan struct{}), make(chan struct{})
	m := load(t, "hostile", wasm.ModuleOptions{
		Name:    "held",
		Timeout: 30 * time.Second,
		CallTool: func(ctx context.Context, req *abi.CallToolRequest) abi.CallToolResponse {
			close(entered)
			<-release
			return abi.CallToolResponse{Result: []byte("released")}
		},
	})
	var ms runtime.MemStats
	collected := func() uint64 {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := collected()

	type result struct {
		resp abi.InterceptResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := intercept(context.Background(), m, "", &abi.InterceptRequest{Tool: "hold"})
		done <- result{resp, err}
	}()
	<-entered
	m.Close()
	close(release)
	r := <-done
	if r.err != nil || header(r.resp, "X-Held") != "released" {
		t.Fatalf("the call in flight during Close: %+v, %v", r.resp, r.err)
	}
	after := collected()
	t.Logf("host heap in use: %d MiB before the call, %d MiB after it completed on a closed module", before/mib, after/mib)
	if after > before+16*mib {
		t.Errorf("the instance that served the call outlives its closed module: heap %d MiB, %d MiB before", after/mib, before/mib)
	}
	if _, err := intercept(context.Background(), m, "", &abi.InterceptRequest{Tool: "ok"}); err == nil {
		t.Error("a call on a closed module succeeded")
	} else if ce := (*wasm.CallError)(nil); !errors.As(err, &ce) || ce.Kind != "closed" {
		t.Errorf("a call on a closed module: %v", err)
	}
}
