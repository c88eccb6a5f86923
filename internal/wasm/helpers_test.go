package wasm_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/wasm"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

// The tests share one runtime (and so one compilation cache): compiling a Go
// guest takes seconds under the race detector, and most tests only need a
// module, not a fresh runtime. Tests that are about runtimes make their own.
// A test that only uses modules of its own runs in parallel (a runtime is
// safe for concurrent use); one that measures the process (its heap, a
// call's elapsed time, a thousand goroutines at once) does not, so that
// nothing else runs beside it.
var shared struct {
	once sync.Once
	rt   *wasm.Runtime
	dir  string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.rt != nil {
		_ = shared.rt.Close(context.Background())
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func sharedRuntime(t testing.TB) *wasm.Runtime {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "antler-wasm-cache-")
		if shared.err != nil {
			return
		}
		shared.rt, shared.err = wasm.NewRuntime(wasm.RuntimeOptions{CacheDir: shared.dir})
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.rt
}

// guestCode builds testdata/guests/<name> (once per test process) and
// returns the .wasm bytes.
func guestCode(t testing.TB, name string) []byte {
	t.Helper()
	return readWasm(t, filepath.Join("testdata", "guests", name))
}

func readWasm(t testing.TB, dir string) []byte {
	t.Helper()
	code, err := os.ReadFile(plugintest.BuildWasm(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// load loads a guest into the shared runtime; the module closes with the test.
func load(t testing.TB, name string, opts wasm.ModuleOptions) *wasm.Module {
	t.Helper()
	if opts.Name == "" {
		opts.Name = name
	}
	m, err := sharedRuntime(t).Load(context.Background(), guestCode(t, name), opts)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(m.Close)
	return m
}

// loadPlugin loads a guest through the plugin layer, on a host sharing the
// shared runtime's on-disk compilation cache (plugintest.Load would compile
// the guest again, which takes seconds under the race detector).
func loadPlugin(t testing.TB, name string, entry plugins.Entry) *plugins.Plugin {
	t.Helper()
	sharedRuntime(t)
	host, err := plugins.NewHost(shared.dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(context.Background()) })
	entry.Kind, entry.Path = plugins.KindWasm, plugintest.BuildWasm(t, filepath.Join("testdata", "guests", name))
	if entry.Name == "" {
		entry.Name = name
	}
	p, err := host.Load(context.Background(), entry)
	if err != nil {
		t.Fatalf("load plugin %s: %v", name, err)
	}
	t.Cleanup(p.Close)
	return p
}

// intercept encodes req, calls antler_intercept and decodes the answer.
func intercept(ctx context.Context, m *wasm.Module, user string, req *abi.InterceptRequest) (abi.InterceptResponse, error) {
	var enc abi.Encoder
	req.Encode(&enc)
	var resp abi.InterceptResponse
	out, err := m.Call(ctx, abi.ExportIntercept, user, enc.Bytes())
	if err != nil {
		return resp, err
	}
	err = resp.Decode(out)
	return resp, err
}

// call runs one intercept for tool and fails the test on any error.
func call(t testing.TB, m *wasm.Module, user, tool string) abi.InterceptResponse {
	t.Helper()
	resp, err := intercept(context.Background(), m, user, &abi.InterceptRequest{Tool: tool, UserID: user})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if resp.Error != "" {
		t.Fatalf("call %s: the guest reported %q", tool, resp.Error)
	}
	return resp
}

// callErr runs one intercept for tool that must fail with a *wasm.CallError.
func callErr(t testing.TB, m *wasm.Module, tool string) *wasm.CallError {
	t.Helper()
	_, err := intercept(context.Background(), m, "", &abi.InterceptRequest{Tool: tool})
	var ce *wasm.CallError
	if !errors.As(err, &ce) {
		t.Fatalf("call %s: want a *wasm.CallError, got %v", tool, err)
	}
	return ce
}

// header returns the value of the answer's header name ("" when absent).
func header(resp abi.InterceptResponse, name string) string {
	for _, h := range resp.SetHeaders {
		if h.Name == name {
			return h.Value
		}
	}
	return ""
}

func hasHeader(resp abi.InterceptResponse, name string) bool {
	for _, h := range resp.SetHeaders {
		if h.Name == name {
			return true
		}
	}
	return false
}
