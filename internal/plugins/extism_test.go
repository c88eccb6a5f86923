package plugins_test

import (
	"context"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

func TestExtismCarrierRunsAHandWrittenPDKGuest(t *testing.T) {
	path := plugintest.BuildWasm(t, "testdata/extismguest")
	host, err := plugins.NewHost("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(context.Background())
	p, err := host.Load(context.Background(), plugins.Entry{Name: "mcpInterceptors[0]", Kind: plugins.KindExtism, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if info := p.Info(); info.Major != abi.Major || !p.HasIntercept() {
		t.Fatalf("info %+v", info)
	}
	for _, tc := range []struct {
		secrets []abi.Header
		deny    bool
	}{{[]abi.Header{{Name: "tenant", Value: "acme"}}, false}, {nil, true}} {
		req := abi.InterceptRequest{Server: "s", Tool: "s_t", Secrets: tc.secrets}
		resp, err := p.Intercept(context.Background(), "u", &req)
		if err != nil {
			t.Fatal(err)
		}
		if tc.deny != (resp.Action == abi.ActionDeny) {
			t.Errorf("secrets %v: %+v", tc.secrets, resp)
		}
		if !tc.deny && (len(resp.SetHeaders) != 1 || resp.SetHeaders[0].Value != "acme") {
			t.Errorf("headers %+v", resp.SetHeaders)
		}
	}
	// The Antler-native Wasm example is not an Extism module.
	if _, err := host.Load(context.Background(), plugins.Entry{Name: "mcpInterceptors[1]", Kind: plugins.KindExtism,
		Path: plugintest.BuildWasm(t, "../../examples/plugins/tenantheader")}); err == nil {
		t.Error("a module without antler_info loaded as an Extism plugin")
	}
}
