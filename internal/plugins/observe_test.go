package plugins_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

// TestObserveWasmInterceptor: the observer the metrics use sees each call
// of an Antler-native Wasm interceptor, with its entry, role and carrier.
func TestObserveWasmInterceptor(t *testing.T) {
	host, err := plugins.NewHost("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(context.Background())
	var seen []string
	host.Observe(func(entry, role, kind string, err error, d time.Duration) {
		seen = append(seen, fmt.Sprintf("%s %s %s %v %v", entry, role, kind, err != nil, d > 0))
	})
	p, err := host.Load(context.Background(), plugins.Entry{Name: "mcpInterceptors[0]", Kind: plugins.KindWasm,
		Path: plugintest.BuildWasm(t, "../../examples/plugins/tenantheader")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	req := abi.InterceptRequest{Server: "s", Tool: "s_t", Secrets: []abi.Header{{Name: "tenant", Value: "acme"}}}
	if _, err := p.Intercept(context.Background(), "u", &req); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != "mcpInterceptors[0] interceptor wasm false true" {
		t.Errorf("observed %q, want one successful wasm interceptor call", seen)
	}
}
