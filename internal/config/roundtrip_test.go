package config_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
)

// roundTripEnv resolves every variable the testdata files use to a value
// that is not itself a reference, so the marshalled form re-parses the same.
var roundTripEnv = env(map[string]string{
	"CRM_URL": "https://crm.example.com/mcp", "CRM_KEY": "key-1", "CRM_SECRET": "secret-1",
	"CRM_REFRESH": "refresh-1", "ALICE_TOKEN": "Bearer alice", "LOCAL_TOKEN": "local-1",
	"GITHUB_TOKEN": "ghp_1", "OPENVIKING_API_KEY": "ov-1",
})

// sameServer compares what a user can observe of two parsed servers.
func sameServer(t *testing.T, a, b *config.Server) {
	t.Helper()
	equal(t, "Name", b.Name, a.Name)
	if !bytes.Equal(a.Slice(), b.Slice()) {
		t.Errorf("server %q changed over the round trip:\n before %s\n after  %s", a.Name, a.Slice(), b.Slice())
	}
	equal(t, a.Name+".Problem", b.Problem, a.Problem)
	equal(t, a.Name+".Extra", compact(t, b.Extra), compact(t, a.Extra))
	equal(t, a.Name+".Enabled", b.Enabled, a.Enabled)
	equal(t, a.Name+".Type", b.Type, a.Type)
	equal(t, a.Name+".SessionInitTimeout", b.SessionInitTimeout, a.SessionInitTimeout)
	equal(t, a.Name+".ToolCallTimeout", b.ToolCallTimeout, a.ToolCallTimeout)
	equal(t, a.Name+".Routing.Mode", b.Routing.Mode, a.Routing.Mode)
	equal(t, a.Name+".Routing.Priority", b.Routing.Priority, a.Routing.Priority)
	for tool := range a.Tools {
		ra, rb := a.EffectiveRouting(tool), b.EffectiveRouting(tool)
		equal(t, a.Name+"."+tool+" routing", compact(t, rb), compact(t, ra))
	}
}

// TestRoundTrip: Parse → json.Marshal → Parse gives the same servers, keeps
// unknown keys at every level, and marshalling again gives the same bytes.
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		doc  []byte
	}{
		{"example", readTestdata(t, "valid/example.json")},
		{"full", readTestdata(t, "valid/full.json")},
		{"minimal", readTestdata(t, "valid/minimal.json")},
		{"empty", readTestdata(t, "valid/empty.json")},
		{"snake case", readTestdata(t, "valid/snake_case.json")},
		{"transport alias", readTestdata(t, "valid/transport_alias.json")},
		{"server problems", []byte(`{"mcpServers": {"a": {"type": "ws"}, "b": {}, "c": {"type": "http"}}}`)},
		{"clamped priority", []byte(`{"mcpServers": {"a": {"command": "c", "routing": {"mode": "prefer", "priority": 150, "keywords": ["x"]}, "tools": {"t": {"routing": {"priority": -5}}}}}}`)},
		{"odd timeouts", []byte(`{"mcpServers": {"a": {"command": "c", "tool_call_timeout": 0.001, "session_init_timeout": 1e-10}}}`)},
		{"result cap", []byte(`{"mcpServers": {"a": {"command": "c", "max_result_bytes": 1048576}, "b": {"type": "http", "url": "u", "max_result_bytes": null}}}`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := mustParse(t, tt.doc, roundTripEnv)
			b1, err := json.Marshal(first)
			if err != nil {
				t.Fatal(err)
			}
			second := mustParse(t, b1, roundTripEnv)
			equal(t, "servers", serverNames(second.Servers), serverNames(first.Servers))
			for i := range first.Servers {
				sameServer(t, first.Servers[i], second.Servers[i])
			}
			equal(t, "Interceptors", second.Interceptors, first.Interceptors)
			equal(t, "MCPDigest", second.MCPDigest(), first.MCPDigest())
			b2, err := json.Marshal(second)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b1, b2) {
				t.Errorf("marshalling is not stable:\n first  %s\n second %s", b1, b2)
			}
		})
	}
}

// TestRoundTripKeepsUnknownKeys: keys Antler does not know (top level, server
// level, inside oauth/user_auth/headers_from_context and tool overrides, and
// the transport alias) are written back.
func TestRoundTripKeepsUnknownKeys(t *testing.T) {
	ext := mustParse(t, readTestdata(t, "valid/full.json"), roundTripEnv)
	out, err := json.Marshal(ext)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path []string
		want string
	}{
		{[]string{"x-top-level"}, `{"kept":[1,"two",null]}`},
		{[]string{"mcpServers", "crm", "x-server"}, `{"nested":["key-1"]}`},
		{[]string{"mcpServers", "crm", "oauth", "x-oauth"}, `"kept"`},
		{[]string{"mcpServers", "crm", "user_auth", "x-user-auth"}, `true`},
		{[]string{"mcpServers", "crm", "headers_from_context", "x-ctx"}, `3`},
		{[]string{"mcpServers", "crm", "tools", "lookup", "x-tool"}, `"kept"`},
		{[]string{"mcpServers", "crm", "tools", "lookup", "routing"}, `{"priority":90}`},
		{[]string{"mcpServers", "crm", "tools", "export", "x-tool-only"}, `[]`},
		{[]string{"skills"}, `{"writer":{"enabled":false}}`},
		{[]string{"middlewares"}, `["app.middleware:Audit"]`},
		{[]string{"mcpInterceptors"}, `["app.mcp:build"]`},
		{[]string{"mcpServers", "crm", "tool_name_prefix"}, `false`},
		{[]string{"mcpServers", "crm", "session_init_timeout"}, `null`},
		{[]string{"mcpServers", "local", "session_init_timeout"}, `null`},
		{[]string{"mcpServers", "local", "cwd"}, `"/srv/local"`},
	}
	for _, tt := range tests {
		v, ok := jsonAt(t, out, tt.path...)
		if !ok {
			t.Errorf("%v missing from %s", tt.path, out)
			continue
		}
		equal(t, "value at "+joinKeys(tt.path), compact(t, v), tt.want)
	}

	alias := mustParse(t, readTestdata(t, "valid/transport_alias.json"), noEnv)
	out, err = json.Marshal(alias)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ server, typ, transport string }{
		{"remote", "http", "http"}, {"both", "sse", "http"}, {"blank-type", "sse", "sse"},
	} {
		tv, _ := jsonAt(t, out, "mcpServers", c.server, "type")
		equal(t, c.server+" type", tv, any(c.typ))
		av, ok := jsonAt(t, out, "mcpServers", c.server, "transport")
		if !ok {
			t.Errorf("%s: transport alias dropped from %s", c.server, out)
		}
		equal(t, c.server+" transport", av, any(c.transport))
	}
}

// TestMarshalWritesDefaults: the file shape written has every field with its
// effective value, under the mcpServers spelling.
func TestMarshalWritesDefaults(t *testing.T) {
	ext := mustParse(t, []byte(`{"mcp_servers": {"fs": {"command": "mcp-fs"}}}`), noEnv)
	out, err := json.Marshal(ext)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"middlewares":[],"mcpServers":{"fs":{"enabled":true,"type":"stdio","command":"mcp-fs","args":[],"env":{},"url":null,"headers":{},` +
		`"oauth":null,"user_auth":null,"headers_from_context":null,"description":"","routing":{"mode":"off","priority":0,"keywords":[]},` +
		`"tools":{},"tool_name_prefix":true,"tool_call_timeout":null,"session_init_timeout":60,"task_toolsets":[]}},"skills":{}}`
	equal(t, "marshalled", string(out), want)
}

func joinKeys(keys []string) string {
	var b bytes.Buffer
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	return b.String()
}

// TestTransportSpellingsCompareEqual: "type" and its "transport" alias give
// the same effective slice, so switching spelling reconnects nothing.
func TestTransportSpellingsCompareEqual(t *testing.T) {
	tests := []struct {
		name, a, b string
	}{
		{"http", `{"type": "http", "url": "u"}`, `{"transport": "http", "url": "u"}`},
		{"sse", `{"type": "sse", "url": "u"}`, `{"transport": "sse", "url": "u"}`},
		{"stdio", `{"type": "stdio", "command": "c"}`, `{"transport": "stdio", "command": "c"}`},
		{"implicit stdio", `{"command": "c"}`, `{"transport": "stdio", "command": "c"}`},
		{"both spellings", `{"type": "http", "url": "u"}`, `{"type": "http", "transport": "sse", "url": "u"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mustParse(t, []byte(`{"mcpServers": {"s": `+tt.a+`}}`), noEnv)
			b := mustParse(t, []byte(`{"mcpServers": {"s": `+tt.b+`}}`), noEnv)
			equal(t, "Type", b.Servers[0].Type, a.Servers[0].Type)
			if !bytes.Equal(a.Servers[0].Slice(), b.Servers[0].Slice()) {
				t.Errorf("Slice differs:\n %s\n %s", a.Servers[0].Slice(), b.Servers[0].Slice())
			}
			if a.MCPDigest() != b.MCPDigest() {
				t.Error("MCPDigest differs")
			}
		})
	}
}

// TestMCPDigest: the digest changes exactly when the effective MCP slice
// does (enabled servers in order, their settings, the interceptors), so
// edits to skills, middlewares or a disabled server reconnect nothing.
func TestMCPDigest(t *testing.T) {
	const base = `{
	  "middlewares": ["a:B"],
	  "mcpInterceptors": ["pkg:build"],
	  "mcpServers": {
	    "fs":  {"command": "mcp-fs", "args": ["--root", "/data"], "env": {"LEVEL": "info"}},
	    "api": {"type": "http", "url": "https://api/mcp", "headers": {"X-Org": "acme"}},
	    "off": {"enabled": false, "command": "old", "args": ["1"]}
	  },
	  "skills": {"writer": {"enabled": true}}
	}`
	servers := func(root *config.Object) *config.Object { return obj(t, root, "mcpServers") }
	tests := []struct {
		name    string
		edit    func(root *config.Object)
		lookup  map[string]string
		changed bool
	}{
		{"no edit", func(*config.Object) {}, nil, false},
		{"skills edit", func(r *config.Object) { obj(t, r, "skills", "writer").Set("enabled", false) }, nil, false},
		{"skill added", func(r *config.Object) { obj(t, r, "skills").Set("new", config.NewObject()) }, nil, false},
		{"middlewares edit", func(r *config.Object) { r.Set("middlewares", []any{"a:B", "c:D"}) }, nil, false},
		{"unknown top-level key", func(r *config.Object) { r.Set("x-note", "hello") }, nil, false},
		{"disabled server args edit", func(r *config.Object) { obj(t, r, "mcpServers", "off").Set("args", []any{"2"}) }, nil, false},
		{"disabled server added", func(r *config.Object) {
			s := config.NewObject()
			s.Set("enabled", false)
			s.Set("command", "x")
			servers(r).Set("new", s)
		}, nil, false},
		{"disabled server removed", func(r *config.Object) { servers(r).Delete("off") }, nil, false},
		{"interceptor list as a bare string", func(r *config.Object) { r.Set("mcpInterceptors", "pkg:build") }, nil, false},
		{"type spelled as transport", func(r *config.Object) {
			api := obj(t, r, "mcpServers", "api")
			api.Delete("type")
			api.Set("transport", "http")
		}, nil, false},
		{"defaults written out", func(r *config.Object) {
			fs := obj(t, r, "mcpServers", "fs")
			fs.Set("enabled", true)
			fs.Set("type", "stdio")
			fs.Set("tool_name_prefix", true)
			fs.Set("session_init_timeout", json.Number("60"))
		}, nil, false},

		{"enabled server args edit", func(r *config.Object) { obj(t, r, "mcpServers", "fs").Set("args", []any{"--root", "/other"}) }, nil, true},
		{"enabled server env edit", func(r *config.Object) { obj(t, r, "mcpServers", "fs", "env").Set("LEVEL", "debug") }, nil, true},
		{"enabled server headers edit", func(r *config.Object) { obj(t, r, "mcpServers", "api", "headers").Set("X-Org", "other") }, nil, true},
		{"enabled server timeout edit", func(r *config.Object) { obj(t, r, "mcpServers", "fs").Set("tool_call_timeout", json.Number("5")) }, nil, true},
		{"enabled server routing edit", func(r *config.Object) {
			rt := config.NewObject()
			rt.Set("mode", "prefer")
			obj(t, r, "mcpServers", "fs").Set("routing", rt)
		}, nil, true},
		{"enabled server unknown key", func(r *config.Object) { obj(t, r, "mcpServers", "fs").Set("x-flag", true) }, nil, true},
		{"server enabled", func(r *config.Object) { obj(t, r, "mcpServers", "off").Set("enabled", true) }, nil, true},
		{"server disabled", func(r *config.Object) { obj(t, r, "mcpServers", "api").Set("enabled", false) }, nil, true},
		{"enabled server removed", func(r *config.Object) { servers(r).Delete("api") }, nil, true},
		{"enabled server added", func(r *config.Object) {
			s := config.NewObject()
			s.Set("command", "x")
			servers(r).Set("new", s)
		}, nil, true},
		{"servers reordered", func(r *config.Object) {
			old := servers(r)
			re := config.NewObject()
			for _, k := range []string{"api", "fs", "off"} {
				v, _ := old.Get(k)
				re.Set(k, v)
			}
			r.Set("mcpServers", re)
		}, nil, true},
		{"interceptor added", func(r *config.Object) { r.Set("mcpInterceptors", []any{"pkg:build", "pkg:other"}) }, nil, true},
		{"interceptors removed", func(r *config.Object) { r.Delete("mcpInterceptors") }, nil, true},
		{"referenced variable changed", func(r *config.Object) { obj(t, r, "mcpServers", "fs", "env").Set("LEVEL", "$LEVEL") }, map[string]string{"LEVEL": "trace"}, true},
	}
	before := mustParse(t, []byte(base), noEnv).MCPDigest()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			after := mustParse(t, editDoc(t, base, tt.edit), env(tt.lookup)).MCPDigest()
			if changed := after != before; changed != tt.changed {
				t.Errorf("digest changed = %v, want %v", changed, tt.changed)
			}
		})
	}

	t.Run("missing interceptors equal an empty list", func(t *testing.T) {
		a := mustParse(t, []byte(`{}`), noEnv).MCPDigest()
		b := mustParse(t, []byte(`{"mcpInterceptors": []}`), noEnv).MCPDigest()
		if a != b {
			t.Error("digest differs")
		}
	})
	t.Run("nil configuration", func(t *testing.T) {
		var e *config.Extensions
		_ = e.MCPDigest() // must not panic
		equal(t, "Enabled", len(e.Enabled()), 0)
		_, ok := e.Server("x")
		equal(t, "Server ok", ok, false)
	})
}

// TestTimeoutPrecision: a timeout written in decimal seconds is read to the
// nanosecond and survives the marshal/parse round trip unchanged.
func TestTimeoutPrecision(t *testing.T) {
	tests := []struct {
		seconds string
		want    time.Duration
	}{
		{"1.005", 1005 * time.Millisecond},
		{"7.94", 7940 * time.Millisecond},
		{"4.35", 4350 * time.Millisecond},
		{"0.1", 100 * time.Millisecond},
		{"123.456789123", 123456789123 * time.Nanosecond},
		{"67.90846759202162", 67908467592 * time.Nanosecond},
		{"86400", 24 * time.Hour},
		{"2e-9", 2 * time.Nanosecond},
	}
	for _, tt := range tests {
		t.Run(tt.seconds, func(t *testing.T) {
			doc := `{"mcpServers": {"s": {"command": "c", "tool_call_timeout": ` + tt.seconds + `, "session_init_timeout": ` + tt.seconds + `}}}`
			first := mustParse(t, []byte(doc), noEnv)
			s := first.Servers[0]
			equal(t, "ToolCallTimeout", s.ToolCallTimeout, tt.want)
			equal(t, "SessionInitTimeout", s.SessionInitTimeout, tt.want)
			out, err := json.Marshal(first)
			if err != nil {
				t.Fatal(err)
			}
			again := mustParse(t, out, noEnv)
			equal(t, "ToolCallTimeout after round trip", again.Servers[0].ToolCallTimeout, tt.want)
			equal(t, "SessionInitTimeout after round trip", again.Servers[0].SessionInitTimeout, tt.want)
			if again.MCPDigest() != first.MCPDigest() {
				t.Error("MCPDigest changed over the round trip")
			}
		})
	}
}
