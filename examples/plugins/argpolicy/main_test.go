package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/plugins/plugintest"
	"github.com/antler-mcp/antler/sdk/sdktest"
)

const policyConfig = `{"deny": [
	{"tool": "*echo", "pattern": "rm\\s+-rf", "message": "Recursive deletes are not allowed."},
	{"pattern": "(?i)drop\\s+table"},
	{"tool": "add", "pattern": "\"a\":\\s*13\\b", "message": "Unlucky number."},
	{"tool": "files_*_v?", "pattern": "secret", "message": "glob"}
]}`

// call runs req through the plugin in-process (sdktest) and through its real
// Wasm build loaded with config, and fails unless both answer the same. It
// returns the answer; failed reports an Error answer (the host fails the
// call closed).
func call(t *testing.T, p *plugins.Plugin, req abi.InterceptRequest) (resp abi.InterceptResponse, failed bool) {
	t.Helper()
	req.Config = p.Entry.Config // what the host does
	in := sdktest.Intercept(t, &req)
	out, err := p.Intercept(context.Background(), req.UserID, &req)
	if (in.Error != "") != (err != nil) {
		t.Fatalf("in-process error %q, Wasm error %v", in.Error, err)
	}
	if err == nil && !reflect.DeepEqual(in, out) {
		t.Fatalf("in-process %+v, Wasm %+v", in, out)
	}
	return in, in.Error != ""
}

func load(t *testing.T, config string) *plugins.Plugin {
	var raw json.RawMessage
	if config != "" {
		raw = json.RawMessage(config)
	}
	return plugintest.Load(t, ".", plugins.Entry{Name: "argpolicy", Config: raw})
}

func TestPolicy(t *testing.T) {
	p := load(t, policyConfig)
	for _, tc := range []struct {
		name, tool, original, args string
		deny                       string // "" continues
	}{
		{"exposed name glob", "http_echo", "echo", `{"message":"rm -rf /"}`, "Recursive deletes are not allowed."},
		{"regexp whitespace", "http_echo", "echo", `{"message":"rm   -rf ~"}`, "Recursive deletes are not allowed."},
		{"other tool", "http_whoami", "whoami", `{"message":"rm -rf /"}`, ""},
		{"harmless echo", "http_echo", "echo", `{"message":"hello"}`, ""},
		{"rule without tool, default message", "db_query", "query", `{"sql":"Drop  Table users"}`, DefaultMessage},
		{"upstream name", "http_add", "add", `{"a": 13, "b": 1}`, "Unlucky number."},
		{"pattern boundary", "http_add", "add", `{"a": 130, "b": 1}`, ""},
		{"no arguments", "http_echo", "echo", ``, ""},
		{"glob is not a regexp", "files_read_v2", "read", `{"p":"secret"}`, ""},
		{"glob literal characters", "files_read_v?", "read", `{"p":"secret"}`, "glob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, failed := call(t, p, abi.InterceptRequest{Server: "s", Tool: tc.tool, OriginalTool: tc.original, Arguments: []byte(tc.args)})
			switch {
			case failed:
				t.Errorf("failed: %q", resp.Error)
			case tc.deny == "" && (resp.Action != abi.ActionContinue || len(resp.SetHeaders)+len(resp.RemoveHeaders) != 0 || resp.Arguments != nil):
				t.Errorf("%+v, want the call forwarded unchanged", resp)
			case tc.deny != "" && (resp.Action != abi.ActionDeny || resp.Message != tc.deny):
				t.Errorf("%+v, want a denial %q", resp, tc.deny)
			}
		})
	}
}

func TestNoRules(t *testing.T) {
	for _, config := range []string{"", `{}`, `{"deny": []}`, `null`} {
		p := load(t, config)
		if resp, failed := call(t, p, abi.InterceptRequest{Tool: "x", Arguments: []byte(`{"message":"rm -rf /"}`)}); failed || resp.Action != abi.ActionContinue {
			t.Errorf("config %q: %+v", config, resp)
		}
	}
}

// A policy that cannot be read fails every call closed, never open.
func TestBrokenConfigFailsClosed(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{`{"deny": [{"pattern": "("}]}`, "deny[0].pattern: error parsing regexp"},
		{`{"deny": [{"pattern": "ok"}, {"tool": "x"}]}`, "deny[1].pattern: is required"},
		{`{"deny": {"pattern": "x"}}`, "config:"},
		{`[1]`, "config:"},
	} {
		p := load(t, tc.config)
		resp, failed := call(t, p, abi.InterceptRequest{Tool: "x", Arguments: []byte(`{}`)})
		if !failed || !strings.Contains(resp.Error, tc.want) {
			t.Errorf("config %s: %+v, want an error containing %q", tc.config, resp, tc.want)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything", true},
		{"echo", "echo", true},
		{"echo", "http_echo", false},
		{"*echo", "http_echo", true},
		{"*_echo", "echo", false},
		{"http_*", "http_echo", true},
		{"h*p*o", "http_echo", true},
		{"h*p*x", "http_echo", false},
		{"a*a*a", "aaaa", true},
		{"a*b", "acbcb", true},
		{"a*b", "acbc", false},
		{"**", "x", true},
		{"a.c", "abc", false},
	} {
		if got := globMatch(tc.pattern, tc.name); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.pattern, tc.name, got)
		}
	}
}

// The config is compiled once per distinct bytes.
func TestCompiledOncePerConfig(t *testing.T) {
	clear(policies)
	a := compiled([]byte(policyConfig))
	if b := compiled([]byte(policyConfig)); a != b {
		t.Error("the same config was compiled twice")
	}
	if c := compiled([]byte(`{}`)); c == a {
		t.Error("another config shares the cached policy")
	}
	for i := range 3 * maxPolicies {
		compiled([]byte(strings.Repeat(" ", i) + `{}`))
	}
	if len(policies) > maxPolicies {
		t.Errorf("%d cached policies, want at most %d", len(policies), maxPolicies)
	}
}
