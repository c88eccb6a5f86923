package main

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/plugins/plugintest"
	"github.com/antler-mcp/antler/sdk/sdktest"
)

// call runs req through the plugin in-process (sdktest) and through its real
// Wasm build, and fails unless both answer the same.
func call(t *testing.T, p *plugins.Plugin, req abi.InterceptRequest) abi.InterceptResponse {
	t.Helper()
	req.Config = p.Entry.Config // what the host does
	in := sdktest.Intercept(t, &req)
	out, err := p.Intercept(context.Background(), req.UserID, &req)
	if err != nil || in.Error != "" {
		t.Fatalf("in-process error %q, Wasm error %v", in.Error, err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("in-process %+v, Wasm %+v", in, out)
	}
	return in
}

func TestTenantHeader(t *testing.T) {
	for _, tc := range []struct {
		name, config  string
		names         []string
		secrets       []abi.Header
		header, value string // a continue with this header set
		deny          string // or this denial
	}{
		{name: "default config", names: []string{"region", "tenant"}, secrets: []abi.Header{{Name: "tenant", Value: "t-1"}},
			header: "X-Tenant-Token", value: "t-1"},
		{name: "empty config object", config: `{}`, names: []string{"tenant"}, secrets: []abi.Header{{Name: "tenant", Value: "t-2"}},
			header: "X-Tenant-Token", value: "t-2"},
		{name: "no secret", deny: "This tool needs your tenant token: send it as the 'tenant' secret."},
		{name: "secret sent but not granted", names: []string{"tenant"},
			deny: "This tool needs your tenant token: send it as the 'tenant' secret."},
		{name: "another granted secret", names: []string{"region"}, secrets: []abi.Header{{Name: "region", Value: "eu"}},
			deny: "This tool needs your tenant token: send it as the 'tenant' secret."},
		{name: "configured header and secret", config: `{"header": "X-Org", "secret": "org"}`, names: []string{"org", "tenant"},
			secrets: []abi.Header{{Name: "org", Value: "o-9"}, {Name: "tenant", Value: "t-1"}}, header: "X-Org", value: "o-9"},
		{name: "configured secret missing", config: `{"header": "X-Org", "secret": "org"}`, names: []string{"tenant"},
			secrets: []abi.Header{{Name: "tenant", Value: "t-1"}}, deny: "This tool needs your tenant token: send it as the 'org' secret."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var raw json.RawMessage
			if tc.config != "" {
				raw = json.RawMessage(tc.config)
			}
			p := plugintest.Load(t, ".", plugins.Entry{Name: "tenantheader", Config: raw})
			resp := call(t, p, abi.InterceptRequest{Server: "crm", Transport: "http", Tool: "crm_find", OriginalTool: "find",
				Arguments: []byte(`{}`), UserID: "alice", SecretNames: tc.names, Secrets: tc.secrets})
			if tc.deny != "" {
				if resp.Action != abi.ActionDeny || resp.Message != tc.deny {
					t.Errorf("%+v, want the denial %q", resp, tc.deny)
				}
				return
			}
			want := []abi.Header{{Name: tc.header, Value: tc.value}}
			if resp.Action != abi.ActionContinue || !reflect.DeepEqual(resp.SetHeaders, want) || resp.Arguments != nil || resp.RemoveHeaders != nil {
				t.Errorf("%+v, want %s: %s and nothing else", resp, tc.header, tc.value)
			}
		})
	}
}

// The cached config follows a config change.
func TestConfigChange(t *testing.T) {
	secrets := []abi.Header{{Name: "a", Value: "1"}, {Name: "b", Value: "2"}}
	for _, c := range []struct{ config, header, value string }{
		{`{"header": "X-A", "secret": "a"}`, "X-A", "1"},
		{`{"header": "X-B", "secret": "b"}`, "X-B", "2"},
		{`{"header": "X-A", "secret": "a"}`, "X-A", "1"},
	} {
		resp := sdktest.Intercept(t, &abi.InterceptRequest{Config: []byte(c.config), Secrets: secrets})
		if len(resp.SetHeaders) != 1 || resp.SetHeaders[0] != (abi.Header{Name: c.header, Value: c.value}) {
			t.Errorf("config %s: %+v", c.config, resp)
		}
	}
}
