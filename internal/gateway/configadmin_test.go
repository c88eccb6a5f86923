package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/configadmin"
	"github.com/antler-mcp/antler/internal/configfile"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/launchpolicy"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// adminCanary is a secret value planted in configuration files; it must never
// appear in a response or a log line.
const adminCanary = "adminCanary-secret-7f3a9c"

// adminAPI is a gateway over a real config file, with an admin key
// ("admin") and an agent key ("agent").
type adminAPI struct {
	*api
	path  string
	cache *toolcache.Cache
	logs  *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newAdminAPI serves doc from a temp file ("" leaves the file missing).
func newAdminAPI(t *testing.T, doc string) *adminAPI {
	t.Helper()
	t.Setenv(launchpolicy.AllowlistEnv, "")
	t.Setenv(launchpolicy.DeerFlowAllowlistEnv, "")
	t.Setenv(config.EnvAllowlistEnv, "")
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if doc != "" {
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cache := toolcache.New(toolcache.Options{ConfigPath: path, Logger: log})
	t.Cleanup(cache.Close)
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{
		Cache: cache, Logger: log,
		Auth: principal.New([]settings.Key{
			{Key: "admin", User: "root", Role: settings.RoleAdmin},
			{Key: "agent", User: "alice", Role: settings.RoleAgent},
		}),
		Admin: configadmin.New(configadmin.Options{Tools: cache, File: configfile.New(path, log), LaunchPolicy: launchpolicy.New(), Logger: log}),
	}).Handler())
	t.Cleanup(srv.Close)
	a := &adminAPI{api: &api{t: t, url: srv.URL, key: "admin"}, path: path, cache: cache, logs: logs}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), adminCanary) {
			t.Errorf("a log line shows the adminCanary secret:\n%s", logs.String())
		}
	})
	return a
}

// call is do that also checks the response never shows the adminCanary.
func (a *adminAPI) call(method, path, body string) (int, map[string]any) {
	a.t.Helper()
	code, res := a.do(method, path, body)
	raw, _ := json.Marshal(res)
	if strings.Contains(string(raw), adminCanary) {
		a.t.Errorf("%s %s answered with the adminCanary secret: %s", method, path, raw)
	}
	return code, res
}

func (a *adminAPI) file() string {
	a.t.Helper()
	data, err := os.ReadFile(a.path)
	if err != nil {
		a.t.Fatal(err)
	}
	return string(data)
}

// stored returns the parsed file.
func (a *adminAPI) stored() map[string]any {
	a.t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(a.file()), &doc); err != nil {
		a.t.Fatalf("config file is not JSON: %v\n%s", err, a.file())
	}
	return doc
}

func (a *adminAPI) server(name string) map[string]any {
	a.t.Helper()
	s, _ := a.stored()["mcpServers"].(map[string]any)[name].(map[string]any)
	return s
}

// unchanged fails unless the file still holds exactly before.
func (a *adminAPI) unchanged(before string) {
	a.t.Helper()
	if got := a.file(); got != before {
		a.t.Errorf("the file changed:\nbefore %s\nafter  %s", before, got)
	}
}

func wantError(t *testing.T, code int, res map[string]any, wantCode int, wantIn ...string) {
	t.Helper()
	msg := fmt.Sprint(res["error"])
	if code != wantCode {
		t.Errorf("status %d (%s), want %d", code, msg, wantCode)
	}
	for _, w := range wantIn {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
}

func jsonEq(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	g, _ := json.Marshal(got)
	var gv any
	_ = json.Unmarshal(g, &gv)
	if !reflect.DeepEqual(gv, w) {
		t.Errorf("%s = %s, want %s", what, g, want)
	}
}

func body(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestConfigAdminRequiresAdmin(t *testing.T) {
	a := newAdminAPI(t, `{"mcpServers": {"x": {"type": "http", "url": "https://x/mcp"}}}`)
	before := a.file()
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/api/mcp/config", ""},
		{"PUT", "/api/mcp/config", `{"mcp_servers": {}}`},
		{"PATCH", "/api/mcp/config", `{"server_name": "x", "enabled": false}`},
		{"POST", "/api/mcp/config/servers", `{"mcp_servers": {"y": {"type": "http", "url": "https://y"}}}`},
		{"PUT", "/api/mcp/config/server", `{"server_name": "x", "server": {"type": "http", "url": "https://z"}}`},
		{"DELETE", "/api/mcp/config/servers/x", ""},
	} {
		code, res := a.as("agent").do(r.method, r.path, r.body)
		if code != 403 || res["error"] != "Admin privileges required to manage MCP configuration." {
			t.Errorf("agent %s %s: %d %v", r.method, r.path, code, res)
		}
	}
	a.unchanged(before)
}

// TestConfigAdminBulkPut: GET → edit → PUT keeps every secret and
// placeholder, removes servers not sent, keeps unknown top-level keys,
// skills and key order, and resets the cache once.
func TestConfigAdminBulkPut(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", adminCanary+"-resolved")
	doc := `{
  "customTopLevel": {"preserve": true, "n": 1.50},
  "mcpServers": {
    "github": {"enabled": true, "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_TOKEN": "$GITHUB_TOKEN"},
      "routing": {"mode": "prefer", "priority": 50, "keywords": ["订单", "SQL"]},
      "tools": {"query": {"routing": {"priority": 100}}}},
    "remote": {"enabled": false, "type": "http", "url": "https://mcp.example/mcp?a=1&b=2",
      "headers": {"X-Api-Key": "` + adminCanary + `"},
      "oauth": {"token_url": "https://auth/token", "client_id": "id", "client_secret": "` + adminCanary + `-cs", "extra_token_params": {"resource": "` + adminCanary + `-r"}},
      "user_auth": {"users": {"alice": "` + adminCanary + `-alice"}},
      "api_key": "` + adminCanary + `-extra", "cwd": "/srv/work"},
    "gone": {"type": "http", "url": "https://gone/mcp"}
  },
  "middlewares": ["example.middleware:Middleware"],
  "skills": {"research": {"enabled": false}},
  "zLast": [1, 2]
}`
	a := newAdminAPI(t, doc)
	code, got := a.call("GET", "/api/mcp/config", "")
	if code != 200 {
		t.Fatalf("GET: %d %v", code, got)
	}
	servers := got["mcp_servers"].(map[string]any)
	delete(servers, "gone")
	servers["remote"].(map[string]any)["enabled"] = true
	gen := a.cache.Generation()
	code, res := a.call("PUT", "/api/mcp/config", body(map[string]any{"mcp_servers": servers}))
	if code != 200 {
		t.Fatalf("PUT: %d %v", code, res)
	}
	if d := a.cache.Generation() - gen; d != 1 {
		t.Errorf("cache reset %d times, want once", d)
	}
	// The response is the masked servers, like GET.
	rs := res["mcp_servers"].(map[string]any)
	if len(rs) != 2 || rs["remote"].(map[string]any)["enabled"] != true {
		t.Errorf("response servers: %v", rs)
	}
	jsonEq(t, "response headers", rs["remote"].(map[string]any)["headers"], `{"X-Api-Key": "***"}`)
	jsonEq(t, "response env", rs["github"].(map[string]any)["env"], `{"GITHUB_TOKEN": "***"}`)

	stored := a.stored()
	if _, ok := stored["mcpServers"].(map[string]any)["gone"]; ok {
		t.Error("a server missing from the PUT body was kept")
	}
	remote := a.server("remote")
	jsonEq(t, "restored headers", remote["headers"], `{"X-Api-Key": "`+adminCanary+`"}`)
	jsonEq(t, "restored oauth secret", remote["oauth"].(map[string]any)["client_secret"], `"`+adminCanary+`-cs"`)
	jsonEq(t, "restored token params", remote["oauth"].(map[string]any)["extra_token_params"], `{"resource": "`+adminCanary+`-r"}`)
	jsonEq(t, "restored users", remote["user_auth"].(map[string]any)["users"], `{"alice": "`+adminCanary+`-alice"}`)
	jsonEq(t, "restored extra", remote["api_key"], `"`+adminCanary+`-extra"`)
	jsonEq(t, "enabled", remote["enabled"], `true`)
	github := a.server("github")
	jsonEq(t, "placeholder kept", github["env"], `{"GITHUB_TOKEN": "$GITHUB_TOKEN"}`)
	jsonEq(t, "routing", github["routing"], `{"mode": "prefer", "priority": 50, "keywords": ["订单", "SQL"]}`)
	if strings.Contains(a.file(), "-resolved") {
		t.Error("a resolved $VAR was written to the file")
	}
	// Unknown top-level keys and skills are kept verbatim, in place.
	for _, k := range []string{"customTopLevel", "middlewares", "skills", "zLast"} {
		var before map[string]any
		_ = json.Unmarshal([]byte(doc), &before)
		if !reflect.DeepEqual(stored[k], before[k]) {
			t.Errorf("%s changed: %v → %v", k, before[k], stored[k])
		}
	}
	if !strings.Contains(a.file(), `"n": 1.50`) || !strings.Contains(a.file(), "a=1&b=2") {
		t.Errorf("number spelling or URL escaping changed:\n%s", a.file())
	}
	top := topKeys(t, a.file())
	if want := []string{"customTopLevel", "mcpServers", "middlewares", "skills", "zLast"}; !reflect.DeepEqual(top, want) {
		t.Errorf("top-level keys %v, want %v", top, want)
	}

	// test_update_mcp_configuration_preserves_omitted_routing_and_tools and
	// _preserves_server_extra_fields: a toggle-only body keeps them.
	code, res = a.call("PUT", "/api/mcp/config", `{"mcp_servers": {
		"github": {"enabled": false, "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_TOKEN": "***"}},
		"remote": {"enabled": false, "type": "http", "url": "https://mcp.example/mcp", "headers": {"X-Api-Key": "***"}}}}`)
	if code != 200 {
		t.Fatalf("PUT: %d %v", code, res)
	}
	github, remote = a.server("github"), a.server("remote")
	jsonEq(t, "kept routing", github["routing"], `{"mode": "prefer", "priority": 50, "keywords": ["订单", "SQL"]}`)
	jsonEq(t, "kept tools", github["tools"], `{"query": {"routing": {"priority": 100}}}`)
	jsonEq(t, "kept extras", []any{remote["api_key"], remote["cwd"]}, `["`+adminCanary+`-extra", "/srv/work"]`)
	jsonEq(t, "kept user_auth", remote["user_auth"].(map[string]any)["users"], `{"alice": "`+adminCanary+`-alice"}`)
	if _, ok := remote["oauth"]; ok {
		t.Error("an omitted oauth block survived a bulk PUT (DeerFlow drops it)")
	}
	if rs := res["mcp_servers"].(map[string]any)["remote"].(map[string]any); rs["api_key"] != "***" || rs["cwd"] != "/srv/work" {
		t.Errorf("response extras: %v %v", rs["api_key"], rs["cwd"])
	}
	noTempFiles(t, filepath.Dir(a.path))
}

func topKeys(t *testing.T, doc string) []string {
	t.Helper()
	v, err := config.ParseJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return v.(*config.Object).Keys()
}

func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}

func TestConfigAdminBulkPutErrors(t *testing.T) {
	const doc = `{"mcpServers": {"target": {"type": "http", "url": "https://old.example/mcp", "headers": {"X-Key": "` + adminCanary + `"}}}, "skills": {"research": {"enabled": false}}}`
	t.Setenv("UNSET_TOOLSET_NAME", "")
	os.Unsetenv("UNSET_TOOLSET_NAME")
	for _, tc := range []struct {
		name, servers string
		code          int
		want          []string
		notIn         string
	}{
		{"masked header for a new key", `{"target": {"type": "http", "url": "https://x", "headers": {"X-Key": "***", "X-New": "***"}}}`,
			400, []string{"Cannot set header 'X-New' to masked value '***'; provide a real value."}, ""},
		{"test_bulk_update_rejects_masked_secret_for_new_server_without_writing",
			`{"added": {"type": "http", "url": "https://new.example/mcp", "providers": [{"name": "alpha", "apiKey": "***"}]}}`,
			400, []string{"Cannot persist masked secret placeholder for extra config key 'providers'"}, ""},
		{"invalid field names the path, not the value", `{"target": {"type": "http", "url": "https://x", "routing": {"mode": "always-` + adminCanary + `"}}}`,
			400, []string{`Invalid MCP configuration: mcpServers.target.routing.mode: must be one of "off", "prefer"`}, adminCanary},
		{"wrong type", `{"target": {"type": "http", "url": "https://x", "tool_call_timeout": "` + adminCanary + `"}}`,
			400, []string{"Invalid MCP configuration: mcpServers.target.tool_call_timeout: must be a number, got a string"}, adminCanary},
		{"test_mcp_writes_validate_runtime_server_constraints_before_writing[bulk]", `{"target": {"type": "http", "url": "https://new.example/mcp", "task_toolsets": [
			{"name": "first", "submit_tool": "submit", "status_tool": "status_first", "cancel_tool": "cancel_first"},
			{"name": "second", "submit_tool": "submit", "status_tool": "status_second", "cancel_tool": "cancel_second"}]}}`,
			400, []string{"Invalid MCP configuration: ", "must be unique"}, ""},
		{"test_new_server_writes_validate_extensions_constraints_before_writing[bulk]", `{"": {"type": "http", "url": "https://new.example/mcp", "task_toolsets": [
			{"name": "task", "submit_tool": "submit", "status_tool": "status", "cancel_tool": "cancel"}]}}`,
			400, []string{"server name"}, ""},
		{"test_mcp_writes_validate_environment_expanded_candidate_before_writing[bulk]", `{"target": {"type": "http", "url": "https://new.example/mcp", "task_toolsets": [
			{"name": "$UNSET_TOOLSET_NAME", "submit_tool": "submit", "status_tool": "status", "cancel_tool": "cancel"}]}}`,
			400, []string{"Invalid MCP configuration: mcpServers.target.task_toolsets[0].name: MCP task toolset name must not be empty"}, ""},
		{"launch policy: disallowed command, even disabled", `{"target": {"type": "http", "url": "https://x"}, "local": {"enabled": false, "command": "bash", "args": ["-c", "id"]}}`,
			400, []string{"MCP server 'local' uses disallowed stdio command 'bash'"}, ""},
		{"launch policy: exec flag", `{"local": {"command": "npx", "args": ["--yes", "-c", "printf ` + adminCanary + `"]}}`,
			400, []string{"MCP server 'local' passes '-c' to 'npx', which would run arbitrary code."}, adminCanary},
		{"launch policy: code-injecting env", `{"local": {"command": "uvx", "args": ["mcp-server-fetch"], "env": {"PYTHONPATH": "/tmp/` + adminCanary + `"}}}`,
			400, []string{"sets environment variable 'PYTHONPATH'"}, adminCanary},
		{"test_validate_mcp_update_enforces_stdio_transport_alias", `{"local": {"transport": "stdio", "command": "custom-mcp-server"}}`,
			400, []string{"disallowed stdio command 'custom-mcp-server'"}, ""},
		{"body: mcp_servers missing", ``, 400, []string{"mcp_servers: is required"}, ""},
		{"body: server not an object", `{"x": [1]}`, 400, []string{"mcp_servers.x: must be a JSON object"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdminAPI(t, doc)
			t.Setenv(config.EnvAllowlistEnv, "UNSET_TOOLSET_NAME") // reaches the loader's check
			before := a.file()
			gen := a.cache.Generation()
			b := `{"mcp_servers": ` + tc.servers + `}`
			if tc.servers == "" {
				b = `{}`
			}
			code, res := a.call("PUT", "/api/mcp/config", b)
			wantError(t, code, res, tc.code, tc.want...)
			if tc.notIn != "" && strings.Contains(fmt.Sprint(res["error"]), tc.notIn) {
				t.Errorf("error echoes the value: %v", res["error"])
			}
			a.unchanged(before)
			if a.cache.Generation() != gen {
				t.Error("a refused PUT reset the cache")
			}
		})
	}
}

// test_candidate_validation_uses_environment_expanded_values: the candidate
// is validated with $VAR resolved, and the placeholder is what is written.
func TestConfigAdminValidatesResolvedValues(t *testing.T) {
	a := newAdminAPI(t, `{"mcpServers": {}}`)
	t.Setenv("ANTLER_TEST_ON_MISSING", "passthrough")
	t.Setenv(config.EnvAllowlistEnv, "ANTLER_TEST_ON_MISSING")
	code, res := a.call("PUT", "/api/mcp/config", `{"mcp_servers": {"target": {"type": "http", "url": "https://example.invalid/mcp",
		"user_auth": {"on_missing": "$ANTLER_TEST_ON_MISSING", "users": {"alice": "`+adminCanary+`"}}}}}`)
	if code != 200 {
		t.Fatalf("%d %v", code, res)
	}
	jsonEq(t, "placeholder written", a.server("target")["user_auth"].(map[string]any)["on_missing"], `"$ANTLER_TEST_ON_MISSING"`)
	jsonEq(t, "response masks users", res["mcp_servers"].(map[string]any)["target"].(map[string]any)["user_auth"].(map[string]any)["users"], `{"alice": "***"}`)
}

func TestConfigAdminPatch(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		// test_update_mcp_server_state_updates_valid_target_despite_unrelated_disallowed_command
		t.Run(fmt.Sprintf("unrelated disallowed sibling, enabled=%v", enabled), func(t *testing.T) {
			a := newAdminAPI(t, fmt.Sprintf(`{"mcpServers": {
				"semantic-scholar": {"enabled": true, "type": "stdio", "command": "s2-mcp-server", "env": {"S2_API_KEY": "$S2_API_KEY"}, "customFlag": "keep-me"},
				"github": {"enabled": %v, "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}},
				"skills": {"research": {"enabled": false}}, "middlewares": ["example.middleware:Middleware"], "customTopLevel": {"preserve": true}}`, !enabled))
			before := a.stored()
			gen := a.cache.Generation()
			code, res := a.call("PATCH", "/api/mcp/config", fmt.Sprintf(`{"server_name": "github", "enabled": %v}`, enabled))
			if code != 200 {
				t.Fatalf("%d %v", code, res)
			}
			after := a.stored()
			if a.server("github")["enabled"] != enabled {
				t.Errorf("github.enabled = %v", a.server("github")["enabled"])
			}
			for _, k := range []string{"skills", "middlewares", "customTopLevel"} {
				if !reflect.DeepEqual(after[k], before[k]) {
					t.Errorf("%s changed", k)
				}
			}
			if !reflect.DeepEqual(after["mcpServers"].(map[string]any)["semantic-scholar"], before["mcpServers"].(map[string]any)["semantic-scholar"]) {
				t.Error("the sibling changed")
			}
			rs := res["mcp_servers"].(map[string]any)
			if rs["github"].(map[string]any)["enabled"] != enabled {
				t.Errorf("response enabled: %v", rs["github"])
			}
			jsonEq(t, "response env", rs["semantic-scholar"].(map[string]any)["env"], `{"S2_API_KEY": "***"}`)
			if d := a.cache.Generation() - gen; d != 1 {
				t.Errorf("cache reset %d times, want once", d)
			}
		})
	}

	t.Run("test_update_mcp_server_state_allows_disabling_but_rejects_enabling_disallowed_command", func(t *testing.T) {
		a := newAdminAPI(t, `{"mcpServers": {"semantic-scholar": {"enabled": true, "type": "stdio", "command": "s2-mcp-server"}}, "skills": {}}`)
		if code, res := a.call("PATCH", "/api/mcp/config", `{"server_name": "semantic-scholar", "enabled": false}`); code != 200 {
			t.Fatalf("disable: %d %v", code, res)
		}
		before := a.file()
		code, res := a.call("PATCH", "/api/mcp/config", `{"server_name": "semantic-scholar", "enabled": true}`)
		wantError(t, code, res, 400, "s2-mcp-server")
		a.unchanged(before)
		if a.server("semantic-scholar")["enabled"] != false {
			t.Error("enabled anyway")
		}
	})

	t.Run("test_update_mcp_server_state_rejects_enabling_arbitrary_exec_args", func(t *testing.T) {
		a := newAdminAPI(t, `{"mcpServers": {"npx-shell": {"enabled": false, "type": "stdio", "command": "npx", "args": ["--yes", "-c", "printf canary"]}}, "skills": {}}`)
		before := a.file()
		gen := a.cache.Generation()
		code, res := a.call("PATCH", "/api/mcp/config", `{"server_name": "npx-shell", "enabled": true}`)
		wantError(t, code, res, 400, "MCP server 'npx-shell' passes '-c' to 'npx', which would run arbitrary code.")
		if strings.Contains(fmt.Sprint(res["error"]), "printf") {
			t.Error("the argument value was echoed")
		}
		a.unchanged(before)
		if a.cache.Generation() != gen {
			t.Error("cache reset after a refused PATCH")
		}
	})

	for _, transport := range []string{"sse", "http"} {
		t.Run("test_update_mcp_server_state_enables_raw_transport_alias["+transport+"]", func(t *testing.T) {
			a := newAdminAPI(t, `{"mcpServers": {"remote": {"enabled": false, "transport": "`+transport+`", "url": "https://mcp.example.com/mcp", "customFlag": "keep-me"}}, "skills": {}}`)
			code, res := a.call("PATCH", "/api/mcp/config", `{"server_name": "remote", "enabled": true}`)
			if code != 200 {
				t.Fatalf("%d %v", code, res)
			}
			jsonEq(t, "raw entry", a.server("remote"), `{"enabled": true, "transport": "`+transport+`", "url": "https://mcp.example.com/mcp", "customFlag": "keep-me"}`)
			if got := res["mcp_servers"].(map[string]any)["remote"].(map[string]any)["type"]; got != transport {
				t.Errorf("response type %v", got)
			}
		})
	}

	t.Run("test_update_mcp_server_state_returns_404_without_writing_or_resetting_cache", func(t *testing.T) {
		a := newAdminAPI(t, `{"mcpServers": {}, "skills": {}}`)
		before := a.file()
		st, _ := os.Stat(a.path)
		gen := a.cache.Generation()
		code, res := a.call("PATCH", "/api/mcp/config", `{"server_name": "missing", "enabled": true}`)
		wantError(t, code, res, 404, "MCP server 'missing' not found")
		a.unchanged(before)
		if st2, _ := os.Stat(a.path); !st2.ModTime().Equal(st.ModTime()) {
			t.Error("the file was rewritten")
		}
		if a.cache.Generation() != gen {
			t.Error("cache reset")
		}
	})

	t.Run("no file", func(t *testing.T) {
		a := newAdminAPI(t, "")
		code, res := a.call("PATCH", "/api/mcp/config", `{"server_name": "x", "enabled": true}`)
		wantError(t, code, res, 404, "MCP server 'x' not found")
		if _, err := os.Stat(a.path); err == nil {
			t.Error("PATCH created the file")
		}
	})

	t.Run("body errors", func(t *testing.T) {
		a := newAdminAPI(t, `{"mcpServers": {"x": {"type": "http", "url": "https://x"}}}`)
		for b, want := range map[string]string{
			`{"server_name": "x"}`:                          "enabled: is required",
			`{"server_name": "", "enabled": true}`:          "server_name: must be a non-empty string",
			`{"server_name": "x", "enabled": "yes"}`:        "enabled: must be true or false",
			`{"server_name": "x", "enabled": true, "z": 1}`: `unknown field "z"`,
			`[]`:     "must be a JSON object",
			`{"a":`:  "must be a JSON object",
			``:       "request body must be a JSON object",
			`{} {}`:  "must be a JSON object",
			`"text"`: "must be a JSON object, got a string",
		} {
			code, res := a.call("PATCH", "/api/mcp/config", b)
			wantError(t, code, res, 400, want)
		}
	})
}

func TestConfigAdminAddServers(t *testing.T) {
	// test_create_mcp_servers_preserves_concurrent_siblings_and_rejects_duplicates
	a := newAdminAPI(t, `{"mcpServers": {"sibling": {"enabled": true, "type": "http", "url": "https://changed-in-another-tab.example/mcp"}},
		"skills": {"research": {"enabled": false}}, "customTopLevel": {"preserve": true}}`)
	before := a.stored()
	gen := a.cache.Generation()
	code, res := a.call("POST", "/api/mcp/config/servers", `{"mcp_servers": {"added": {"command": "npx", "args": ["-y", "@example/mcp"], "env": {"TOKEN": "`+adminCanary+`"}}}}`)
	if code != 200 {
		t.Fatalf("%d %v", code, res)
	}
	after := a.stored()
	for _, k := range []string{"skills", "customTopLevel"} {
		if !reflect.DeepEqual(after[k], before[k]) {
			t.Errorf("%s changed", k)
		}
	}
	jsonEq(t, "sibling", a.server("sibling"), `{"enabled": true, "type": "http", "url": "https://changed-in-another-tab.example/mcp"}`)
	jsonEq(t, "added (raw, as sent)", a.server("added"), `{"command": "npx", "args": ["-y", "@example/mcp"], "env": {"TOKEN": "`+adminCanary+`"}}`)
	if got := res["mcp_servers"].(map[string]any)["added"].(map[string]any); got["command"] != "npx" || got["session_init_timeout"] != 60.0 {
		t.Errorf("response: %v", got)
	}
	if d := a.cache.Generation() - gen; d != 1 {
		t.Errorf("cache reset %d times", d)
	}

	beforeDup := a.file()
	code, res = a.call("POST", "/api/mcp/config/servers", `{"mcp_servers": {"never-written": {"command": "uvx"}, "added": {"command": "npx", "args": ["pkg"]}}}`)
	wantError(t, code, res, 409, "MCP server 'added' already exists")
	a.unchanged(beforeDup)

	for _, tc := range []struct {
		name, server string
		want         string
	}{
		{"test_create_mcp_servers_rejects_masked_secret_sentinel_without_writing",
			`{"type": "http", "url": "https://new.example/mcp", "providers": [{"name": "alpha", "apiKey": "***"}]}`, "Cannot persist masked secret placeholder for extra config key 'providers'"},
		{"test_new_server_writes_reject_masked_headers_from_context_extra_without_writing",
			`{"type": "http", "url": "https://new.example/mcp", "headers_from_context": {"api_key": "***"}}`, "headers_from_context extra config key 'api_key'"},
		{"test_new_server_writes_reject_masked_per_tool_override_secret_without_writing",
			`{"type": "http", "url": "https://new.example/mcp", "tools": {"search": {"api_key": "***"}}}`, "api_key"},
		{"test_new_server_writes_reject_masked_oauth_secret_without_writing",
			`{"type": "http", "url": "https://new.example/mcp", "oauth": {"token_url": "https://auth.example.com/token", "client_secret": "***"}}`, "oauth client_secret"},
		{"test_mcp_writes_validate_runtime_server_constraints_before_writing[create]", `{"type": "http", "url": "https://new.example/mcp", "task_toolsets": [
			{"name": "first", "submit_tool": "submit", "status_tool": "s1", "cancel_tool": "c1"}, {"name": "second", "submit_tool": "submit", "status_tool": "s2", "cancel_tool": "c2"}]}`, "must be unique"},
		{"task driver: set in the file only", `{"type": "http", "url": "https://new.example/mcp", "task_toolsets": [
			{"name": "jobs", "submit_tool": "enqueue", "status_tool": "job_state", "cancel_tool": "abort_job", "driver": "process:/bin/sh"}]}`,
			"mcpServers.new.task_toolsets[0].driver: a task driver runs code on the host"},
		{"disabled server: task driver refused too", `{"enabled": false, "type": "http", "url": "https://new.example/mcp", "task_toolsets": [
			{"name": "jobs", "submit_tool": "enqueue", "status_tool": "job_state", "cancel_tool": "abort_job", "driver": {"kind": "wasm", "path": "./d.wasm"}}]}`,
			"a task driver runs code on the host"},
		{"server task driver: set in the file only", `{"type": "http", "url": "https://new.example/mcp", "driver": "process:/bin/sh"}`,
			"mcpServers.new.driver: a task driver runs code on the host"},
		{"enabled server: full launch policy", `{"command": "s2-mcp-server"}`, "uses disallowed stdio command 's2-mcp-server'"},
		{"disabled server: command shape still checked", `{"enabled": false, "command": "/usr/local/bin/npx"}`, "command must be a single executable name"},
		{"disabled server: environment still checked", `{"enabled": false, "command": "npx", "env": {"BASH_ENV": "/tmp/payload.sh"}}`, "sets environment variable 'BASH_ENV'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := a.file()
			code, res := a.call("POST", "/api/mcp/config/servers", `{"mcp_servers": {"new": `+tc.server+`}}`)
			wantError(t, code, res, 400, tc.want)
			a.unchanged(before)
		})
	}

	// A disabled server is screened for shape and environment only: the
	// allowlist and the argument screen wait until it is enabled.
	code, res = a.call("POST", "/api/mcp/config/servers", `{"mcp_servers": {"offline": {"enabled": false, "command": "s2-mcp-server", "args": ["-c", "x"]}}}`)
	if code != 200 {
		t.Fatalf("disabled custom command: %d %v", code, res)
	}
	code, res = a.call("PATCH", "/api/mcp/config", `{"server_name": "offline", "enabled": true}`)
	wantError(t, code, res, 400, "s2-mcp-server")
	noTempFiles(t, filepath.Dir(a.path))
}

// test_mcp_create_without_existing_config_uses_resolvable_project_root: with
// no file, POST and PUT create one where the host will look for it.
func TestConfigAdminCreatesMissingFile(t *testing.T) {
	t.Run("named file", func(t *testing.T) {
		a := newAdminAPI(t, "")
		code, res := a.call("POST", "/api/mcp/config/servers", `{"mcp_servers": {"added": {"command": "npx", "args": ["pkg"]}}}`)
		if code != 200 {
			t.Fatalf("%d %v", code, res)
		}
		jsonEq(t, "new file", a.stored(), `{"mcpServers": {"added": {"command": "npx", "args": ["pkg"]}}, "skills": {}}`)
		if st, _ := os.Stat(a.path); st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, want 0600 (the file holds secrets)", st.Mode().Perm())
		}
		// GET, PUT server and DELETE of a missing file.
		b := newAdminAPI(t, "")
		if code, res := b.call("GET", "/api/mcp/config", ""); code != 200 || len(res["mcp_servers"].(map[string]any)) != 0 {
			t.Errorf("GET without a file: %d %v", code, res)
		}
		code, res = b.call("PUT", "/api/mcp/config/server", `{"server_name": "x", "server": {"command": "npx", "args": ["pkg"]}}`)
		wantError(t, code, res, 404, "MCP configuration not found")
		code, res = b.call("DELETE", "/api/mcp/config/servers/x", "")
		wantError(t, code, res, 404, "MCP configuration not found")
		code, res = b.call("PUT", "/api/mcp/config", `{"mcp_servers": {"added": {"command": "npx", "args": ["pkg"]}}}`)
		if code != 200 {
			t.Fatalf("PUT creates: %d %v", code, res)
		}
	})
	t.Run("nothing configured: ./extensions_config.json", func(t *testing.T) {
		dir := t.TempDir()
		t.Chdir(dir)
		t.Setenv(config.EnvPath, "")
		t.Setenv(config.EnvDeerFlowPath, "")
		t.Setenv(launchpolicy.AllowlistEnv, "")
		t.Setenv(launchpolicy.DeerFlowAllowlistEnv, "")
		cache := toolcache.New(toolcache.Options{})
		defer cache.Close()
		srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler())
		defer srv.Close()
		a := &api{t: t, url: srv.URL}
		code, res := a.do("PUT", "/api/mcp/config", `{"mcp_servers": {"added": {"command": "npx", "args": ["-y", "@example/mcp"]}}}`)
		if code != 200 {
			t.Fatalf("%d %v", code, res)
		}
		if _, err := os.Stat(filepath.Join(dir, "extensions_config.json")); err != nil {
			t.Fatalf("not created in the working directory: %v", err)
		}
		if path, _ := cache.ConfigPath(); path != filepath.Join(dir, "extensions_config.json") {
			t.Errorf("the host resolves %q, not the created file", path)
		}
		// The default launch policy reads the environment per request.
		code, res = a.do("POST", "/api/mcp/config/servers", `{"mcp_servers": {"py": {"command": "python", "args": ["-m", "trusted_mcp_server"]}}}`)
		wantError(t, code, res, 400, "disallowed stdio command 'python'")
		t.Setenv(launchpolicy.AllowlistEnv, "python")
		if code, res := a.do("POST", "/api/mcp/config/servers", `{"mcp_servers": {"py": {"command": "python", "args": ["-m", "trusted_mcp_server"]}}}`); code != 200 {
			t.Errorf("allowlisted python: %d %v", code, res)
		}
	})
}

func TestConfigAdminPutServer(t *testing.T) {
	t.Run("test_update_mcp_server_preserves_latest_sibling_and_masked_secret", func(t *testing.T) {
		a := newAdminAPI(t, `{"mcpServers": {
			"target": {"enabled": true, "type": "http", "url": "https://old.example/mcp", "headers": {"Authorization": "Bearer `+adminCanary+`"}},
			"sibling": {"enabled": false, "command": "uvx", "args": ["changed-by-another-tab"]}}, "skills": {}}`)
		code, res := a.call("PUT", "/api/mcp/config/server", `{"server_name": "target", "server": {"enabled": false, "type": "http", "url": "https://old.example/v2/mcp", "headers": {"Authorization": "***"}}}`)
		if code != 200 {
			t.Fatalf("%d %v", code, res)
		}
		jsonEq(t, "sibling", a.server("sibling"), `{"enabled": false, "command": "uvx", "args": ["changed-by-another-tab"]}`)
		jsonEq(t, "target", a.server("target"), `{"enabled": false, "type": "http", "url": "https://old.example/v2/mcp", "headers": {"Authorization": "Bearer `+adminCanary+`"}}`)
		jsonEq(t, "response", res["mcp_servers"].(map[string]any)["target"].(map[string]any)["headers"], `{"Authorization": "***"}`)
		// The server keeps its place among its siblings.
		v, _ := config.ParseJSON([]byte(a.file()))
		servers, _ := v.(*config.Object).Get("mcpServers")
		if keys := servers.(*config.Object).Keys(); !reflect.DeepEqual(keys, []string{"target", "sibling"}) {
			t.Errorf("server order %v", keys)
		}
	})

	t.Run("test_update_mcp_server_masks_and_restores_per_tool_override_secrets", func(t *testing.T) {
		a := newAdminAPI(t, `{"mcpServers": {"target": {"enabled": true, "type": "http", "url": "https://example.com/mcp",
			"tools": {"search": {"routing": {"mode": "prefer", "priority": 40}, "api_key": "`+adminCanary+`", "nested": {"refreshToken": "`+adminCanary+`-r", "safe": "visible"}}}}}, "skills": {}}`)
		_, got := a.call("GET", "/api/mcp/config", "")
		server := got["mcp_servers"].(map[string]any)["target"].(map[string]any)
		search := server["tools"].(map[string]any)["search"].(map[string]any)
		jsonEq(t, "masked tool extras", []any{search["api_key"], search["nested"]}, `["***", {"refreshToken": "***", "safe": "visible"}]`)
		search["routing"].(map[string]any)["priority"] = 80
		code, res := a.call("PUT", "/api/mcp/config/server", body(map[string]any{"server_name": "target", "server": server}))
		if code != 200 {
			t.Fatalf("%d %v", code, res)
		}
		jsonEq(t, "stored tool", a.server("target")["tools"].(map[string]any)["search"],
			`{"routing": {"mode": "prefer", "priority": 80}, "api_key": "`+adminCanary+`", "nested": {"refreshToken": "`+adminCanary+`-r", "safe": "visible"}}`)
	})

	t.Run("test_get_and_targeted_put_preserve_environment_placeholders_outside_secret_fields", func(t *testing.T) {
		t.Setenv("ANTLER_TEST_EDITOR_TOKEN", adminCanary+"-resolved")
		const ph = "$ANTLER_TEST_EDITOR_TOKEN"
		a := newAdminAPI(t, `{"mcpServers": {"target": {"type": "stdio", "command": "npx", "args": ["--api-key", "`+ph+`"], "env": {"MCP_TOKEN": "`+ph+`"}, "provider_note": "`+ph+`"}}, "skills": {}}`)
		_, got := a.call("GET", "/api/mcp/config", "")
		editable := got["mcp_servers"].(map[string]any)["target"].(map[string]any)
		jsonEq(t, "GET args", editable["args"], `["--api-key", "`+ph+`"]`)
		jsonEq(t, "GET env", editable["env"], `{"MCP_TOKEN": "***"}`)
		jsonEq(t, "GET extra", editable["provider_note"], `"`+ph+`"`)
		code, res := a.call("PUT", "/api/mcp/config/server", body(map[string]any{"server_name": "target", "server": editable}))
		if code != 200 {
			t.Fatalf("%d %v", code, res)
		}
		stored := a.server("target")
		jsonEq(t, "stored", []any{stored["args"], stored["env"], stored["provider_note"]}, `[["--api-key", "`+ph+`"], {"MCP_TOKEN": "`+ph+`"}, "`+ph+`"]`)
	})

	t.Run("test_targeted_oauth_extra_round_trip_preserves_extensions_and_secrets", func(t *testing.T) {
		a := newAdminAPI(t, `{"mcpServers": {"target": {"enabled": true, "type": "http", "url": "https://old.example/mcp",
			"oauth": {"token_url": "https://auth.example.com/token", "extra_token_params": {"client_assertion": "`+adminCanary+`-a", "resource": "https://resource.example.com"},
				"vendor_endpoint": "https://vendor.example.com/oauth", "vendor_api_key": "`+adminCanary+`-v", "nested": {"refreshToken": "`+adminCanary+`-n", "safe": "visible"}}}}, "skills": {}}`)
		_, got := a.call("GET", "/api/mcp/config", "")
		masked := got["mcp_servers"].(map[string]any)["target"].(map[string]any)
		oauth := masked["oauth"].(map[string]any)
		jsonEq(t, "masked params", oauth["extra_token_params"], `{"client_assertion": "***", "resource": "***"}`)
		jsonEq(t, "masked extras", []any{oauth["vendor_endpoint"], oauth["vendor_api_key"], oauth["nested"]}, `["https://vendor.example.com/oauth", "***", {"refreshToken": "***", "safe": "visible"}]`)
		masked["url"] = "https://old.example/v2/mcp"
		if code, res := a.call("PUT", "/api/mcp/config/server", body(map[string]any{"server_name": "target", "server": masked})); code != 200 {
			t.Fatalf("%d %v", code, res)
		}
		target := a.server("target")
		so := target["oauth"].(map[string]any)
		jsonEq(t, "url", target["url"], `"https://old.example/v2/mcp"`)
		jsonEq(t, "oauth", []any{so["vendor_endpoint"], so["vendor_api_key"], so["extra_token_params"], so["nested"]},
			`["https://vendor.example.com/oauth", "`+adminCanary+`-v", {"client_assertion": "`+adminCanary+`-a", "resource": "https://resource.example.com"}, {"refreshToken": "`+adminCanary+`-n", "safe": "visible"}]`)
	})

	t.Run("test_update_mcp_server_honors_deletions_in_complete_replacement", func(t *testing.T) {
		a := newAdminAPI(t, `{"mcpServers": {"target": {"enabled": true, "type": "http", "url": "https://old.example/mcp",
			"headers": {"Authorization": "Bearer `+adminCanary+`"}, "api_key": "`+adminCanary+`-x", "custom_note": "remove-me",
			"routing": {"mode": "prefer", "priority": 80, "keywords": ["legacy"]}, "tools": {"search": {"routing": {"priority": 90}}},
			"user_auth": {"users": {"u1": "Bearer `+adminCanary+`-u"}}, "headers_from_context": {"headers": {"X-Tenant": "tenant_id"}, "on_missing": "passthrough"}},
			"sibling": {"enabled": false, "command": "uvx", "args": ["changed-by-another-tab"]}}, "skills": {}}`)
		code, res := a.call("PUT", "/api/mcp/config/server", `{"server_name": "target", "server": {"enabled": true, "type": "http", "url": "https://old.example/v2/mcp", "headers": {"Authorization": "***"}, "api_key": "***"}}`)
		if code != 200 {
			t.Fatalf("%d %v", code, res)
		}
		jsonEq(t, "target", a.server("target"), `{"enabled": true, "type": "http", "url": "https://old.example/v2/mcp", "headers": {"Authorization": "Bearer `+adminCanary+`"}, "api_key": "`+adminCanary+`-x"}`)
		rs := res["mcp_servers"].(map[string]any)["target"].(map[string]any)
		jsonEq(t, "defaults after the reset", []any{rs["user_auth"], rs["headers_from_context"], rs["routing"], rs["tools"]}, `[null, null, {"mode": "off", "priority": 0, "keywords": []}, {}]`)
	})

	for _, tc := range []struct{ name, server, want string }{
		{"test_update_mcp_server_rejects_new_masked_per_tool_override_secret_without_writing",
			`{"type": "http", "url": "https://example.com/mcp", "tools": {"search": {"api_key": "***"}}}`, "Cannot set extra config key 'api_key' to masked value '***'; provide a real value."},
		{"test_update_mcp_server_rejects_masked_array_structural_edit_without_writing",
			`{"enabled": true, "type": "http", "url": "https://new.example/mcp", "providers": [{"name": "alpha", "apiKey": "***"}, {"name": "beta", "apiKey": "***"}, {"name": "gamma", "apiKey": "secret-gamma"}]}`,
			"Cannot edit extra config array 'providers' while masked secrets remain"},
		{"test_mcp_writes_validate_runtime_server_constraints_before_writing[targeted]", `{"type": "http", "url": "https://new.example/mcp", "task_toolsets": [
			{"name": "first", "submit_tool": "submit", "status_tool": "s1", "cancel_tool": "c1"}, {"name": "second", "submit_tool": "submit", "status_tool": "s2", "cancel_tool": "c2"}]}`, "must be unique"},
		{"test_update_mcp_server_rejects_invalid_disabled_stdio_without_writing[blank-command]", `{"enabled": false, "type": "stdio", "command": " "}`, "requires a command"},
		{"test_update_mcp_server_rejects_invalid_disabled_stdio_without_writing[command-path]", `{"enabled": false, "type": "stdio", "command": "/usr/local/bin/npx"}`, "single executable name"},
		{"test_update_mcp_server_rejects_invalid_disabled_stdio_without_writing[command-whitespace]", `{"enabled": false, "type": "stdio", "command": "npx --yes"}`, "single executable name"},
		{"test_update_mcp_server_rejects_invalid_disabled_stdio_without_writing[command-metachar]", `{"enabled": false, "type": "stdio", "command": "npx;echo"}`, "single executable name"},
		{"test_update_mcp_server_rejects_invalid_disabled_stdio_without_writing[injecting-env]", `{"enabled": false, "type": "stdio", "command": "npx", "env": {"BASH_ENV": "/tmp/payload.sh"}}`, "environment variable"},
		{"unknown server", "", "MCP server 'nope' not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdminAPI(t, `{"mcpServers": {"target": {"enabled": false, "type": "stdio", "command": "npx", "args": ["mcp-server-fetch"],
				"tools": {"search": {"routing": {"priority": 20}}}, "providers": [{"name": "alpha", "apiKey": "`+adminCanary+`-a"}, {"name": "beta", "apiKey": "`+adminCanary+`-b"}]}}, "skills": {}}`)
			before := a.file()
			b := `{"server_name": "target", "server": ` + tc.server + `}`
			code := 404
			if tc.server == "" {
				b = `{"server_name": "nope", "server": {"command": "npx", "args": ["pkg"]}}`
			} else {
				code = 400
			}
			c, res := a.call("PUT", "/api/mcp/config/server", b)
			wantError(t, c, res, code, tc.want)
			a.unchanged(before)
		})
	}

	t.Run("test_update_mcp_server_allows_editing_disabled_disallowed_stdio_server", func(t *testing.T) {
		a := newAdminAPI(t, `{"mcpServers": {"semantic-scholar": {"enabled": false, "type": "stdio", "command": "s2-mcp-server", "args": ["--old"], "description": "Old description"}}, "skills": {}}`)
		code, res := a.call("PUT", "/api/mcp/config/server", `{"server_name": "semantic-scholar", "server": {"enabled": false, "type": "stdio", "command": "s2-mcp-server", "args": ["--new"], "description": "Updated while offline"}}`)
		if code != 200 {
			t.Fatalf("%d %v", code, res)
		}
		jsonEq(t, "stored", []any{a.server("semantic-scholar")["args"], a.server("semantic-scholar")["description"]}, `[["--new"], "Updated while offline"]`)
		before := a.file()
		code, res = a.call("PUT", "/api/mcp/config/server", `{"server_name": "semantic-scholar", "server": {"enabled": true, "type": "stdio", "command": "s2-mcp-server"}}`)
		wantError(t, code, res, 400, "s2-mcp-server")
		a.unchanged(before)
	})
}

func TestConfigAdminDelete(t *testing.T) {
	// test_delete_mcp_server_accepts_empty_name_and_preserves_siblings and
	// test_delete_mcp_server_route_uses_bodyless_path_parameter.
	a := newAdminAPI(t, `{"mcpServers": {"": {"enabled": false, "command": "npx"}, "team/tools": {"type": "http", "url": "https://t/mcp"},
		"a b%": {"type": "http", "url": "https://ab/mcp"}, "sibling": {"enabled": true, "type": "http", "url": "https://changed-in-another-tab.example/mcp"}}, "skills": {}}`)
	gen := a.cache.Generation()
	code, res := a.call("DELETE", "/api/mcp/config/servers/", "")
	if code != 200 {
		t.Fatalf("%d %v", code, res)
	}
	if d := a.cache.Generation() - gen; d != 1 {
		t.Errorf("cache reset %d times", d)
	}
	if _, ok := res["mcp_servers"].(map[string]any)[""]; ok {
		t.Error("the empty name is still listed")
	}
	if code, res := a.call("DELETE", "/api/mcp/config/servers/team%2Ftools", ""); code != 200 {
		t.Fatalf("escaped slash: %d %v", code, res)
	}
	if code, res := a.call("DELETE", "/api/mcp/config/servers/a%20b%25", ""); code != 200 {
		t.Fatalf("escaped space and percent: %d %v", code, res)
	}
	jsonEq(t, "servers", a.stored()["mcpServers"], `{"sibling": {"enabled": true, "type": "http", "url": "https://changed-in-another-tab.example/mcp"}}`)
	before := a.file()
	code, res = a.call("DELETE", "/api/mcp/config/servers/sibling2", "")
	wantError(t, code, res, 404, "MCP server 'sibling2' not found")
	a.unchanged(before)
}

// test_state_and_delete_validate_expanded_document_before_writing.
func TestConfigAdminValidatesWholeDocument(t *testing.T) {
	os.Unsetenv("ANTLER_TEST_UNSET_SIBLING_TOOLSET")
	const doc = `{"mcpServers": {"target": {"enabled": true, "type": "http", "url": "https://target.example/mcp"},
		"invalid-sibling": {"type": "http", "url": "https://sibling.example/mcp", "task_toolsets": [
			{"name": "$ANTLER_TEST_UNSET_SIBLING_TOOLSET", "submit_tool": "submit", "status_tool": "status", "cancel_tool": "cancel"}]}}, "skills": {}}`
	for _, r := range []struct{ method, path, body string }{
		{"PATCH", "/api/mcp/config", `{"server_name": "target", "enabled": false}`},
		{"DELETE", "/api/mcp/config/servers/target", ""},
	} {
		a := newAdminAPI(t, doc)
		code, res := a.call(r.method, r.path, r.body)
		wantError(t, code, res, 400, "Invalid MCP configuration: mcpServers.invalid-sibling.task_toolsets[0].name: MCP task toolset name must not be empty")
		a.unchanged(doc)
	}
}

// test_mcp_config_endpoints_map_invalid_operator_document_to_400 and
// test_mcp_config_endpoints_map_invalid_stored_server_to_400.
func TestConfigAdminInvalidDocument(t *testing.T) {
	requests := map[string][3]string{
		"get":    {"GET", "/api/mcp/config", ""},
		"bulk":   {"PUT", "/api/mcp/config", `{"mcp_servers": {"target": {"command": "npx", "args": ["pkg"]}}}`},
		"create": {"POST", "/api/mcp/config/servers", `{"mcp_servers": {"added": {"command": "npx", "args": ["pkg"]}}}`},
		"update": {"PUT", "/api/mcp/config/server", `{"server_name": "target", "server": {"command": "npx", "args": ["pkg"]}}`},
		"delete": {"DELETE", "/api/mcp/config/servers/target", ""},
		"state":  {"PATCH", "/api/mcp/config", `{"server_name": "target", "enabled": false}`},
	}
	for _, doc := range []struct{ raw, want string }{
		{"{not-json", "not valid JSON"},
		{"[]", "Extensions configuration must be a JSON object"},
		{`{"mcpServers": [], "skills": {}}`, "`mcpServers` must be a JSON object"},
	} {
		for name, r := range requests {
			t.Run(name+" "+doc.raw, func(t *testing.T) {
				a := newAdminAPI(t, doc.raw)
				code, res := a.call(r[0], r[1], r[2])
				wantError(t, code, res, 400, "Invalid MCP configuration: ", doc.want)
				a.unchanged(doc.raw)
			})
		}
	}
	const bad = `{"mcpServers": {"target": "not-an-object"}, "skills": {}}`
	for _, name := range []string{"get", "update", "state", "bulk"} {
		t.Run(name+" stored server not an object", func(t *testing.T) {
			a := newAdminAPI(t, bad)
			r := requests[name]
			code, res := a.call(r[0], r[1], r[2])
			wantError(t, code, res, 400, "Invalid MCP configuration: mcpServers.target: ")
			a.unchanged(bad)
		})
	}
}

// TestConfigAdminResetsToolCache: the tool list follows servers added and
// removed through the API.
func TestConfigAdminResetsToolCache(t *testing.T) {
	url := testmcp.StartHTTP(t, "http") + "/mcp"
	a := newAdminAPI(t, `{"mcpServers": {}}`)
	tools := func() int {
		t.Helper()
		code, res := a.call("GET", "/api/mcp/tools", "")
		if code != 200 {
			t.Fatalf("tools: %d %v", code, res)
		}
		return len(res["tools"].([]any))
	}
	if n := tools(); n != 0 {
		t.Fatalf("%d tools before", n)
	}
	gen := a.cache.Generation()
	if code, res := a.call("POST", "/api/mcp/config/servers", `{"mcp_servers": {"demo": {"type": "http", "url": "`+url+`"}}}`); code != 200 {
		t.Fatalf("add: %d %v", code, res)
	}
	if a.cache.Generation() == gen {
		t.Error("adding a server did not reset the cache")
	}
	if n := tools(); n != 8 {
		t.Errorf("%d tools after adding the demo server, want 8", n)
	}
	if code, res := a.call("PATCH", "/api/mcp/config", `{"server_name": "demo", "enabled": false}`); code != 200 {
		t.Fatalf("disable: %d %v", code, res)
	}
	if n := tools(); n != 0 {
		t.Errorf("%d tools after disabling, want 0", n)
	}
	if code, res := a.call("PATCH", "/api/mcp/config", `{"server_name": "demo", "enabled": true}`); code != 200 {
		t.Fatalf("enable: %d %v", code, res)
	}
	if n := tools(); n != 8 {
		t.Errorf("%d tools after enabling, want 8", n)
	}
	if code, res := a.call("DELETE", "/api/mcp/config/servers/demo", ""); code != 200 {
		t.Fatalf("delete: %d %v", code, res)
	}
	if n := tools(); n != 0 {
		t.Errorf("%d tools after deleting, want 0", n)
	}
}

// TestConfigAdminConcurrentWriters: concurrent mutations in one process
// serialise (no lost update, valid JSON throughout, no temp file left).
func TestConfigAdminConcurrentWriters(t *testing.T) {
	a := newAdminAPI(t, `{"mcpServers": {"shared": {"type": "http", "url": "https://s/mcp"}}, "skills": {"k": {"enabled": true}}}`)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("s%02d", i)
			if code, res := a.do("POST", "/api/mcp/config/servers", `{"mcp_servers": {"`+name+`": {"type": "http", "url": "https://x/mcp", "headers": {"K": "`+adminCanary+`"}}}}`); code != 200 {
				t.Errorf("add %s: %d %v", name, code, res)
			}
			if code, res := a.do("PATCH", "/api/mcp/config", fmt.Sprintf(`{"server_name": "shared", "enabled": %v}`, i%2 == 0)); code != 200 {
				t.Errorf("toggle: %d %v", code, res)
			}
			if i%3 == 0 {
				if code, res := a.do("DELETE", "/api/mcp/config/servers/"+name, ""); code != 200 {
					t.Errorf("delete %s: %d %v", name, code, res)
				}
			}
		}()
	}
	wg.Wait()
	servers := a.stored()["mcpServers"].(map[string]any)
	for i := range 20 {
		name := fmt.Sprintf("s%02d", i)
		if _, ok := servers[name]; ok == (i%3 == 0) {
			t.Errorf("%s present=%v", name, ok)
		} else if ok {
			jsonEq(t, name+" headers", servers[name].(map[string]any)["headers"], `{"K": "`+adminCanary+`"}`)
		}
	}
	noTempFiles(t, filepath.Dir(a.path))
}

// The policy screens what the host will launch: a $VAR in the transport,
// command or args is resolved first, as the loader will resolve it.
func TestConfigAdminScreensResolvedLaunch(t *testing.T) {
	a := newAdminAPI(t, `{"mcpServers": {}}`)
	t.Setenv("ANTLER_TEST_TRANSPORT", "stdio")
	t.Setenv("ANTLER_TEST_FLAG", "--call")
	t.Setenv(config.EnvAllowlistEnv, "ANTLER_TEST_TRANSPORT,ANTLER_TEST_FLAG") // the launch policy decides
	before := a.file()
	for name, server := range map[string]string{
		"type":    `{"type": "$ANTLER_TEST_TRANSPORT", "command": "bash", "args": ["-c", "echo pwned"]}`,
		"args":    `{"command": "npx", "args": ["$ANTLER_TEST_FLAG", "echo pwned"]}`,
		"command": `{"type": "$ANTLER_TEST_TRANSPORT", "command": "npx", "args": ["-c", "echo pwned"]}`,
	} {
		code, res := a.call("POST", "/api/mcp/config/servers", `{"mcp_servers": {"evil": `+server+`}}`)
		if msg := fmt.Sprint(res["error"]); code != 400 || strings.Contains(msg, "pwned") || !strings.Contains(msg, "MCP server 'evil'") {
			t.Errorf("%s placeholder: %d %v, want the launch policy's 400 without the value", name, code, res)
		}
		a.unchanged(before)
	}
}

// A whole-set PUT does not re-screen an enabled entry it sends back as it
// launches today (an operator's file may set what the API refuses), but
// screens it as soon as its launch changes.
func TestConfigAdminBulkPutKeepsOperatorEntries(t *testing.T) {
	a := newAdminAPI(t, `{"mcpServers": {"global": {"command": "npx", "args": ["-y", "some-server"],
		"env": {"npm_config_prefix": "/usr/local", "TOKEN": "`+adminCanary+`"}}}}`)
	put := func(args string) (int, map[string]any) {
		return a.call("PUT", "/api/mcp/config", `{"mcp_servers": {
			"global": {"command": "npx", "args": `+args+`, "env": {"npm_config_prefix": "***", "TOKEN": "***"}},
			"remote": {"type": "http", "url": "https://example.invalid/mcp"}}}`)
	}
	if code, res := put(`["-y", "some-server"]`); code != 200 {
		t.Fatalf("PUT with the operator's entry unchanged: %d %v", code, res)
	}
	if env := a.server("global")["env"].(map[string]any); env["npm_config_prefix"] != "/usr/local" || env["TOKEN"] != adminCanary {
		t.Errorf("stored env lost: %v", env)
	}
	before := a.file()
	// New args with the masked values: the stored secrets would follow the
	// server to the new command line, so that is refused first.
	code, res := put(`["-y", "other-server"]`)
	wantError(t, code, res, 400, "'args' changes")
	a.unchanged(before)
	// With real values the changed launch is screened.
	code, res = a.call("PUT", "/api/mcp/config", `{"mcp_servers": {
		"global": {"command": "npx", "args": ["-y", "other-server"], "env": {"npm_config_prefix": "/usr/local", "TOKEN": "t"}}}}`)
	wantError(t, code, res, 400, "npm_config_prefix")
	a.unchanged(before)
}

// A whole-set PUT screens an entry whose working directory changed: the
// operator's filesystem server, whose allowed directory "." is its cwd,
// must not be pointed at "/" (or given a cwd it did not have). Sending the
// cwd back as stored is no change.
func TestConfigAdminBulkPutScreensCwdChange(t *testing.T) {
	a := newAdminAPI(t, `{"mcpServers": {
		"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."], "cwd": "/srv/data"},
		"plain": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}}}`)
	put := func(fsCwd, plainCwd string) (int, map[string]any) {
		cwd := func(c string) string {
			if c == "" {
				return ""
			}
			return `, "cwd": "` + c + `"`
		}
		return a.call("PUT", "/api/mcp/config", `{"mcp_servers": {
			"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]`+cwd(fsCwd)+`},
			"plain": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]`+cwd(plainCwd)+`}}}`)
	}
	before := a.file()
	for _, tc := range []struct{ name, fs, plain, server string }{
		{"cwd changed to /", "/", "", "fs"},
		{"cwd added", "/srv/data", "/", "plain"},
		{"relative cwd added", "/srv/data", "..", "plain"},
	} {
		code, res := put(tc.fs, tc.plain)
		wantError(t, code, res, 400, "MCP server '"+tc.server+"'", "'cwd'")
		if strings.Contains(fmt.Sprint(res["error"]), `/`) && strings.Contains(fmt.Sprint(res["error"]), "'/'") {
			t.Errorf("%s: the error shows the value: %v", tc.name, res["error"])
		}
		a.unchanged(before)
	}
	// The stored cwd sent back, or dropped, is fine.
	if code, res := put("/srv/data", ""); code != 200 {
		t.Fatalf("PUT with the stored cwd: %d %v", code, res)
	}
	if got := a.server("fs")["cwd"]; got != "/srv/data" {
		t.Errorf("stored cwd %v", got)
	}
	// A new server, or a targeted replace, may not choose one either; a
	// PATCH that only enables keeps the stored one.
	code, res := a.call("POST", "/api/mcp/config/servers", `{"mcp_servers": {"new": {"command": "npx", "args": ["pkg"], "cwd": "/"}}}`)
	wantError(t, code, res, 400, "'cwd'")
	code, res = a.call("PUT", "/api/mcp/config/server", `{"server_name": "plain", "server": {"command": "npx", "args": ["pkg"], "cwd": "/"}}`)
	wantError(t, code, res, 400, "'cwd'")
	if code, res := a.call("PATCH", "/api/mcp/config", `{"server_name": "fs", "enabled": false}`); code != 200 {
		t.Fatalf("disable: %d %v", code, res)
	}
	if code, res := a.call("PATCH", "/api/mcp/config", `{"server_name": "fs", "enabled": true}`); code != 200 {
		t.Fatalf("enable with the stored cwd: %d %v", code, res)
	}
}

// A whole-set PUT screens an entry whose env values changed, not only its
// names: the operator's npm_config_userconfig pointed at /proc/self/environ,
// with another value holding a config line, is refused.
func TestConfigAdminBulkPutScreensEnvValueChange(t *testing.T) {
	a := newAdminAPI(t, `{"mcpServers": {
		"npm": {"command": "npx", "args": ["-y", "some-server"], "env": {"npm_config_userconfig": "/etc/antler/npmrc", "NOTE": "hello"}},
		"local": {"command": "node", "args": ["server.js"], "env": {"TOKEN": "`+adminCanary+`"}}}}`)
	put := func(userconfig, note, token string) (int, map[string]any) {
		return a.call("PUT", "/api/mcp/config", body(map[string]any{"mcp_servers": map[string]any{
			"npm":   map[string]any{"command": "npx", "args": []string{"-y", "some-server"}, "env": map[string]string{"npm_config_userconfig": userconfig, "NOTE": note}},
			"local": map[string]any{"command": "node", "args": []string{"server.js"}, "env": map[string]string{"TOKEN": token}},
		}}))
	}
	if code, res := put("/etc/antler/npmrc", "hello", "***"); code != 200 {
		t.Fatalf("PUT unchanged: %d %v", code, res)
	}
	before := a.file()
	code, res := put("/proc/self/environ", "\ncall=touch /tmp/x\n", "***")
	wantError(t, code, res, 400, "MCP server 'npm'", "'npm_config_userconfig'")
	if msg := fmt.Sprint(res["error"]); strings.Contains(msg, "/proc") || strings.Contains(msg, "touch") {
		t.Errorf("the error shows a value: %s", msg)
	}
	a.unchanged(before)
	// A changed value of a harmless variable re-screens the entry too: this
	// operator entry's command is off the allowlist.
	code, res = put("/etc/antler/npmrc", "hello", "other-token")
	wantError(t, code, res, 400, "MCP server 'local'", "disallowed stdio command 'node'")
	a.unchanged(before)
}

// An unchanged GET → PUT round trip always succeeds, however the operator
// wrote the file: no "type" (GET shows the default), a command off the
// allowlist, $VAR placeholders, masked secrets, a cwd, a disabled entry.
func TestConfigAdminRoundTripOperatorEntries(t *testing.T) {
	t.Setenv("ANTLER_TEST_DIR", "/srv/data")
	a := newAdminAPI(t, `{"mcpServers": {
		"local": {"command": "node", "args": ["server.js", "$ANTLER_TEST_DIR"], "env": {"API_KEY": "`+adminCanary+`", "MODE": "fast"}, "cwd": "/srv/app"},
		"old": {"enabled": false, "command": "python3", "args": ["-c", "print(1)"], "env": {"npm_config_userconfig": "/etc/npmrc", "HOME": "/srv"}},
		"fs": {"transport": "stdio", "command": "npx", "args": ["-y", "pkg"], "env": {"NODE_OPTIONS": "--max-old-space-size=512"}}}}`)
	before := a.stored()["mcpServers"]
	code, got := a.call("GET", "/api/mcp/config", "")
	if code != 200 {
		t.Fatalf("GET: %d %v", code, got)
	}
	if typ := got["mcp_servers"].(map[string]any)["local"].(map[string]any)["type"]; typ != "stdio" {
		t.Fatalf("GET shows type %v for an entry without one; this test expects the default", typ)
	}
	code, res := a.call("PUT", "/api/mcp/config", body(map[string]any{"mcp_servers": got["mcp_servers"]}))
	if code != 200 {
		t.Fatalf("PUT of what GET returned: %d %v", code, res)
	}
	after := a.stored()["mcpServers"].(map[string]any)
	for name, want := range before.(map[string]any) {
		w, g := want.(map[string]any), after[name].(map[string]any)
		for _, k := range []string{"command", "args", "env", "cwd", "enabled"} {
			if w[k] != nil && !reflect.DeepEqual(w[k], g[k]) {
				t.Errorf("%s.%s: stored %v, after the round trip %v", name, k, w[k], g[k])
			}
		}
	}
	// A second round trip of the rewritten file is no change either.
	_, got = a.call("GET", "/api/mcp/config", "")
	if code, res := a.call("PUT", "/api/mcp/config", body(map[string]any{"mcp_servers": got["mcp_servers"]})); code != 200 {
		t.Fatalf("second round trip: %d %v", code, res)
	}
}

// The env-file attack through the API, in every spelling: refused with the
// key or option named and no value shown, nothing written.
func TestConfigAdminRefusesNpmConfigFiles(t *testing.T) {
	a := newAdminAPI(t, `{"mcpServers": {"keep": {"type": "http", "url": "https://k/mcp"}}}`)
	before := a.file()
	const payload = "\ncall=touch /tmp/antler-canary\n"
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"-y", "pkg"}, map[string]string{"npm_config_userconfig": "/proc/self/environ", "X": payload}, "'npm_config_userconfig'"},
		{nil, map[string]string{"npm_config_userconfig": "/proc/self/environ", "X": payload}, "without a package"},
		{[]string{"-y", "pkg"}, map[string]string{"NPM_CONFIG_USERCONFIG": "/proc/self/environ", "X": payload}, "NPM_CONFIG_USERCONFIG"},
		{[]string{"-y", "pkg"}, map[string]string{"Npm_Config_Globalconfig": "/proc/self/environ", "X": payload}, "Npm_Config_Globalconfig"},
		{[]string{"-y", "pkg"}, map[string]string{"npm_config_globalconfig=/proc/self/environ": "", "X": payload}, "'npm_config_globalconfig'"},
		{[]string{"-y", "pkg"}, map[string]string{"HOME": "/mnt/user-data/workspace", "X": payload}, "'HOME'"},
		{[]string{"--userconfig=/proc/self/environ", "-y", "pkg"}, map[string]string{"X": payload}, "'--userconfig'"},
		{[]string{"--userconfig", "/proc/self/environ", "-y", "pkg"}, map[string]string{"X": payload}, "'--userconfig'"},
		{[]string{"--userc=/proc/self/environ", "-y", "pkg"}, map[string]string{"X": payload}, "'--userc'"},
		{[]string{"--yes=--globalconfig=/proc/self/environ", "pkg"}, map[string]string{"X": payload}, "'--globalconfig'"},
		{[]string{"---globalconfig", "/proc/self/environ", "pkg"}, map[string]string{"X": payload}, "'---globalconfig'"},
		{[]string{"-C", "/mnt/user-data/workspace", "pkg"}, nil, "'-C'"},
		{[]string{"--userconfig=/proc/self/environ"}, map[string]string{"X": payload}, "'--userconfig'"},
		{nil, map[string]string{"X": payload}, "without a package"},
	} {
		server := map[string]any{"command": "npx", "args": tc.args}
		if tc.env != nil {
			server["env"] = tc.env
		}
		for _, req := range []struct{ method, path, body string }{
			{"POST", "/api/mcp/config/servers", body(map[string]any{"mcp_servers": map[string]any{"evil": server}})},
			{"PUT", "/api/mcp/config", body(map[string]any{"mcp_servers": map[string]any{"keep": map[string]any{"type": "http", "url": "https://k/mcp"}, "evil": server}})},
		} {
			code, res := a.call(req.method, req.path, req.body)
			wantError(t, code, res, 400, "MCP server 'evil'", tc.want)
			if msg := fmt.Sprint(res["error"]); strings.Contains(msg, "/proc") || strings.Contains(msg, "touch") || strings.Contains(msg, "user-data") {
				t.Errorf("%s %q %v: the error shows a value: %s", req.method, tc.args, tc.env, msg)
			}
			a.unchanged(before)
		}
	}
}

// TestConfigAdminEnvironAttackWithRealNpx performs the /proc/self/environ
// attack against the real host with the pinned npx: a config entry whose
// npm_config_userconfig is the child's own environment, and another variable
// holding "\ncall=touch <canary> && exec node <server>\n", makes npx run the
// shell command and then the real server, which stays connected. Written
// into the file by the operator (not screened), it does exactly that; sent
// through the API, as a new server or by changing only the values of an
// operator's entry, it is refused and its canary never appears.
func TestConfigAdminEnvironAttackWithRealNpx(t *testing.T) {
	index := testnpm.Everything(t)
	bin := filepath.Join(testmcp.RepoRoot(t), "testdata", "npm", "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "npx")); err != nil {
		t.Skipf("pinned npx not installed: %v", err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	fileCanary, apiCanary := filepath.Join(dir, "file-canary"), filepath.Join(dir, "api-canary")
	payload := func(canary string) string { return "\ncall=touch " + canary + " && exec node " + index + "\n" }
	rc := filepath.Join(dir, "operator.npmrc")
	if err := os.WriteFile(rc, []byte("call=exec node "+index+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAdminAPI(t, body(map[string]any{"mcpServers": map[string]any{
		"control": map[string]any{"command": "npx", "env": map[string]string{"npm_config_userconfig": "/proc/self/environ", "NOTE": payload(fileCanary)}},
		"npm":     map[string]any{"command": "npx", "env": map[string]string{"npm_config_userconfig": rc, "NOTE": "hello"}},
	}}))
	connected := func() map[string]bool {
		t.Helper()
		if code, res := a.call("GET", "/api/mcp/tools", ""); code != 200 {
			t.Fatalf("tools: %d %v", code, res)
		}
		code, res := a.call("GET", "/api/mcp/servers", "")
		if code != 200 {
			t.Fatalf("servers: %d %v", code, res)
		}
		out := map[string]bool{}
		for _, s := range res["servers"].([]any) {
			m := s.(map[string]any)
			out[fmt.Sprint(m["name"])] = m["state"] == "connected"
		}
		return out
	}
	if st := connected(); !st["control"] || !st["npm"] {
		t.Fatalf("the operator's entries did not connect through the real npx: %v", st)
	}
	if _, err := os.Stat(fileCanary); err != nil {
		t.Fatalf("the attack written into the file did not run its canary (%v): this host cannot show the attack, so the test proves nothing", err)
	}

	before := a.file()
	// Only the values of the operator's entry change (the names stay).
	code, res := a.call("PUT", "/api/mcp/config", body(map[string]any{"mcp_servers": map[string]any{
		"control": map[string]any{"command": "npx", "env": map[string]string{"npm_config_userconfig": "/proc/self/environ", "NOTE": payload(fileCanary)}},
		"npm":     map[string]any{"command": "npx", "env": map[string]string{"npm_config_userconfig": "/proc/self/environ", "NOTE": payload(apiCanary)}},
	}}))
	// Screened now, the entry is refused (it names no package either).
	wantError(t, code, res, 400, "MCP server 'npm'")
	for _, name := range []string{"npm_config_userconfig", "NPM_CONFIG_USERCONFIG", "npm_config_globalconfig", "Npm_Config_GlobalConfig"} {
		code, res := a.call("POST", "/api/mcp/config/servers", body(map[string]any{"mcp_servers": map[string]any{
			"evil": map[string]any{"command": "npx", "env": map[string]string{name: "/proc/self/environ", "NOTE": payload(apiCanary)}},
		}}))
		wantError(t, code, res, 400, "MCP server 'evil'")
	}
	for _, args := range [][]string{{"--userconfig=/proc/self/environ"}, {"--globalconfig", "/proc/self/environ"}, {"--userc=/proc/self/environ"}} {
		code, res := a.call("POST", "/api/mcp/config/servers", body(map[string]any{"mcp_servers": map[string]any{
			"evil": map[string]any{"command": "npx", "args": args, "env": map[string]string{"NOTE": payload(apiCanary)}},
		}}))
		wantError(t, code, res, 400, "MCP server 'evil'")
	}
	a.unchanged(before)
	if st := connected(); !st["npm"] || len(st) != 2 {
		t.Errorf("servers after the refused edits: %v", st)
	}
	if _, err := os.Stat(apiCanary); err == nil {
		t.Fatal("an attack sent through the config API ran its canary")
	}
}

// A config file above config.MaxFileSize is refused both ways: the API never
// writes one (the host would refuse to load it and keep the old tools), and
// GET refuses to read one by its size instead of reading it whole.
func TestConfigAdminFileSizeLimit(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	server := func(i int) string {
		return fmt.Sprintf(`"s%d": {"type": "http", "url": "https://example.invalid/%d", "enabled": false, "description": %q}`, i, i, big)
	}
	a := newAdminAPI(t, `{"mcpServers": {`+server(0)+`, `+server(1)+`, `+server(2)+`}}`)
	before := a.file()
	code, res := a.call("POST", "/api/mcp/config/servers", `{"mcp_servers": {`+server(3)+`, `+server(4)+`}}`)
	wantError(t, code, res, 400, "above the limit of 4194304 bytes")
	a.unchanged(before)
	if code, res := a.call("POST", "/api/mcp/config/servers", `{"mcp_servers": {"small": {"type": "http", "url": "https://example.invalid/s"}}}`); code != 200 {
		t.Errorf("a small addition: %d %v", code, res)
	}

	// GET through the host's own resolution of the file (no ConfigFile
	// option), against a file the operator made too large.
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	doc := `{"mcpServers": {` + server(0) + `, ` + server(1) + `, ` + server(2) + `, ` + server(3) + `, ` + server(4) + `}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path})
	t.Cleanup(cache.Close)
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler())
	t.Cleanup(srv.Close)
	code, res = (&api{t: t, url: srv.URL}).do("GET", "/api/mcp/config", "")
	wantError(t, code, res, 500, "too large", "above the limit of 4194304 bytes")
}
