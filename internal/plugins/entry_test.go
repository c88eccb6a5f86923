package plugins_test

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/plugins"
)

func TestParseEntry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "config")
	abs := filepath.Join(t.TempDir(), "abs", "p.wasm")
	const name = "mcpInterceptors[1]"
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	for _, tc := range []struct {
		label, raw string
		want       plugins.Entry // Name is filled in
	}{
		{"wasm string, relative", `"wasm:./tenant.wasm"`,
			plugins.Entry{Kind: "wasm", Path: filepath.Join(dir, "tenant.wasm"), Isolate: "shared"}},
		{"wasm string, nested relative", `"wasm:plugins/../lib/t.wasm"`,
			plugins.Entry{Kind: "wasm", Path: filepath.Join(dir, "lib", "t.wasm"), Isolate: "shared"}},
		{"wasm string, parent", `"wasm:../t.wasm"`,
			plugins.Entry{Kind: "wasm", Path: filepath.Join(filepath.Dir(dir), "t.wasm"), Isolate: "shared"}},
		{"wasm string, absolute", str("wasm:" + abs),
			plugins.Entry{Kind: "wasm", Path: abs, Isolate: "shared"}},
		{"process string", `"process:bin/plugin"`,
			plugins.Entry{Kind: "process", Path: filepath.Join(dir, "bin", "plugin"), Isolate: "shared"}},
		{"extism string", `"extism:x.wasm"`,
			plugins.Entry{Kind: "extism", Path: filepath.Join(dir, "x.wasm"), Isolate: "shared"}},
		{"object, every field",
			`{"kind":"wasm","path":"plugins/t.wasm","config":{"header":"X-T","n":[1,2]},` +
				`"grants":{"secrets":["tenant","region"],"clock":true,"random":true},"servers":["crm","docs"],` +
				`"timeout_ms":250,"max_memory_mb":64,"isolate":"per_user"}`,
			plugins.Entry{Kind: "wasm", Path: filepath.Join(dir, "plugins", "t.wasm"),
				Config:      json.RawMessage(`{"header":"X-T","n":[1,2]}`),
				Grants:      plugins.Grants{Secrets: []string{"tenant", "region"}, Clock: true, Random: true},
				Servers:     []string{"crm", "docs"},
				Timeout:     250 * time.Millisecond,
				MaxMemoryMB: 64,
				Isolate:     "per_user"}},
		{"object, defaults", `{"kind":"process","path":` + str(abs) + `}`,
			plugins.Entry{Kind: "process", Path: abs, Isolate: "shared"}},
		{"object, explicit shared and limits", `{"kind":"wasm","path":"./a.wasm","isolate":"shared","timeout_ms":600000,"max_memory_mb":4096}`,
			plugins.Entry{Kind: "wasm", Path: filepath.Join(dir, "a.wasm"), Isolate: "shared", Timeout: 10 * time.Minute, MaxMemoryMB: 4096}},
	} {
		t.Run(tc.label, func(t *testing.T) {
			got, skip, warning, err := plugins.ParseEntry(name, json.RawMessage(tc.raw), dir)
			if err != nil || skip || warning != "" {
				t.Fatalf("ParseEntry(%s) = skip %v, warning %q, error %v", tc.raw, skip, warning, err)
			}
			tc.want.Name = name
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseEntry(%s)\n got %+v\nwant %+v", tc.raw, got, tc.want)
			}
			if !filepath.IsAbs(got.Path) {
				t.Errorf("path %q is not absolute", got.Path)
			}
		})
	}
}

func TestParseEntrySkipsDeerFlowImports(t *testing.T) {
	for _, raw := range []string{"my_pkg.mod:build", "deerflow.interceptors.tenant:make_interceptor", "python:attr"} {
		b, _ := json.Marshal(raw)
		_, skip, warning, err := plugins.ParseEntry("mcpInterceptors[0]", b, "/cfg")
		if err != nil || !skip {
			t.Errorf("%s: skip %v, error %v; want skipped", raw, skip, err)
			continue
		}
		for _, want := range []string{"mcpInterceptors[0]", `"` + raw + `"`, "module:attr", "skipping"} {
			if !strings.Contains(warning, want) {
				t.Errorf("%s: warning %q does not contain %q", raw, warning, want)
			}
		}
	}
}

func TestParseEntryErrors(t *testing.T) {
	const name = "mcpInterceptors[1]"
	for _, tc := range []struct{ raw, want string }{
		// String forms.
		{`"wasm:"`, name + `: must be "wasm:<path>", "process:<path>" or an object`},
		{`"process:"`, name + `: must be "wasm:<path>"`},
		{`"tenant.wasm"`, name + `: must be "wasm:<path>"`},
		{`""`, name + `: must be "wasm:<path>"`},
		{`"my_pkg.mod:"`, name + `: must be "wasm:<path>"`},
		{`"python:/opt/x.py"`, name + `: must be "wasm:<path>"`},
		// Object checks, each naming its field.
		{`{"path":"x.wasm"}`, name + `.kind: must be one of "wasm", "process", "extism"`},
		{`{"kind":"python","path":"x.wasm"}`, name + `.kind: must be one of`},
		{`{"kind":"WASM","path":"x.wasm"}`, name + `.kind: must be one of`},
		{`{"kind":5,"path":"x.wasm"}`, name + `.kind: must be a string`},
		{`{"kind":"wasm"}`, name + `.path: is required`},
		{`{"kind":"wasm","path":""}`, name + `.path: is required`},
		{`{"kind":"wasm","path":"x","isolate":"per_tenant"}`, name + `.isolate: must be "shared" or "per_user"`},
		{`{"kind":"wasm","path":"x","isolate":1}`, name + `.isolate: must be a string`},
		{`{"kind":"process","path":"x","isolate":"per_user"}`, name + `.isolate: "per_user" is for wasm plugins only (a process plugin serves every user from one instance)`},
		{`{"kind":"extism","path":"x","isolate":"per_user"}`, name + `.isolate: "per_user" is for wasm plugins only`},
		{`{"kind":"wasm","path":"x","timeout_ms":-1}`, name + `.timeout_ms: must be between 1 and 600000`},
		{`{"kind":"wasm","path":"x","timeout_ms":600001}`, name + `.timeout_ms: must be between 1 and 600000`},
		{`{"kind":"wasm","path":"x","timeout_ms":"5s"}`, name + `.timeout_ms: must be an integer`},
		{`{"kind":"wasm","path":"x","timeout_ms":1.5}`, name + `.timeout_ms: must be an integer`},
		{`{"kind":"wasm","path":"x","max_memory_mb":4097}`, name + `.max_memory_mb: must be between 1 and 4096`},
		{`{"kind":"wasm","path":"x","max_memory_mb":-5}`, name + `.max_memory_mb:`},
		{`{"kind":"wasm","path":"x","servers":"crm"}`, name + `.servers: must be a list`},
		{`{"kind":"wasm","path":"x","grants":"all"}`, name + `.grants: must be an object`},
		{`{"kind":"wasm","path":"x","grants":{"secrets":"tenant"}}`, name + `.grants.secrets: must be a list`},
		{`{"kind":"wasm","path":"x","grants":{"clock":"yes"}}`, name + `.grants.clock: must be true or false`},
		// Unknown fields are named.
		{`{"kind":"wasm","path":"x","timeuot_ms":5}`, name + `: unknown field "timeuot_ms"`},
		{`{"kind":"wasm","path":"x","grants":{"secret":["t"]}}`, `unknown field "secret"`},
	} {
		e, skip, warning, err := plugins.ParseEntry(name, json.RawMessage(tc.raw), "/cfg")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseEntry(%s) error %v, want one containing %q", tc.raw, err, tc.want)
		}
		if skip || warning != "" || e.Name != name {
			t.Errorf("ParseEntry(%s): skip %v, warning %q, name %q", tc.raw, skip, warning, e.Name)
		}
	}
}

func TestGrantsAllows(t *testing.T) {
	for _, tc := range []struct {
		secrets []string
		key     string
		want    bool
	}{
		{nil, "tenant", false},
		{[]string{}, "tenant", false},
		{[]string{"tenant"}, "tenant", true},
		{[]string{"tenant"}, "Tenant", false},
		{[]string{"tenant"}, "tenant2", false},
		{[]string{"region", "tenant"}, "tenant", true},
		{[]string{"*"}, "anything", true},
		{[]string{"t*"}, "tenant", false}, // "*" alone is the wildcard; no globs
	} {
		if got := (plugins.Grants{Secrets: tc.secrets}).Allows(tc.key); got != tc.want {
			t.Errorf("Grants%v.Allows(%q) = %v", tc.secrets, tc.key, got)
		}
	}
}

func TestEntryApplies(t *testing.T) {
	for _, tc := range []struct {
		servers []string
		server  string
		want    bool
	}{
		{nil, "crm", true},
		{[]string{}, "crm", true},
		{[]string{"crm"}, "crm", true},
		{[]string{"crm"}, "docs", false},
		{[]string{"crm"}, "CRM", false},
		{[]string{"docs", "crm"}, "crm", true},
		{[]string{"crm"}, "", false},
	} {
		e := plugins.Entry{Servers: tc.servers}
		if got := e.Applies(tc.server); got != tc.want {
			t.Errorf("Entry{Servers: %v}.Applies(%q) = %v", tc.servers, tc.server, got)
		}
	}
}
