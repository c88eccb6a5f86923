package plugins_test

import (
	"context"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/plugins"
)

// TestPerUserIsolationIsWasmOnly: a process or Extism plugin serves every
// user from one instance, and the host once accepted "isolate": "per_user"
// for one and ignored it, so a plugin that kept per-user state as the ABI
// allows under that setting handed one user's data to the next. An entry
// built in code is refused as the parsed one is (TestParseEntryErrors), as
// an interceptor and as a task driver, before anything starts.
func TestPerUserIsolationIsWasmOnly(t *testing.T) {
	host, err := plugins.NewHost("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Close(context.Background()) })
	ctx := context.Background()
	for _, kind := range []string{plugins.KindProcess, plugins.KindExtism} {
		e := plugins.Entry{Name: "lastuser", Kind: kind, Path: "/nonexistent/lastuser", Isolate: plugins.IsolatePerUser}
		if p, err := host.Load(ctx, e); err == nil || !strings.Contains(err.Error(), `isolate: "per_user" is for wasm plugins only`) {
			if p != nil {
				p.Close()
			}
			t.Errorf("Load of a per_user %s plugin: %v, want the isolation refusal", kind, err)
		}
		if d, err := host.LoadDriver(ctx, e); err == nil || !strings.Contains(err.Error(), `isolate: "per_user" is for wasm plugins only`) {
			if d != nil {
				d.Close()
			}
			t.Errorf("LoadDriver of a per_user %s plugin: %v, want the isolation refusal", kind, err)
		}
	}
}
