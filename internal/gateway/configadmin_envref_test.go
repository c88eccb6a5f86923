package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	"github.com/antler-mcp/antler/internal/toolcache"
)

// headerListener is a loopback HTTP listener that keeps every header value
// it receives: where a server's resolved headers land at discovery.
type headerListener struct {
	*httptest.Server
	mu     sync.Mutex
	values []string
}

func newHeaderListener(t *testing.T) *headerListener {
	t.Helper()
	r := &headerListener{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		for name, vs := range req.Header {
			for _, v := range vs {
				r.values = append(r.values, name+": "+v)
			}
		}
		r.mu.Unlock()
		http.Error(w, "not an MCP server", http.StatusNotFound)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *headerListener) saw(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.values {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

// The reproduced exfiltration: an admin request writes "$NAME" into a
// header (or env, args, oauth, extras) so that the host sends the value of
// its own environment variable to a listener the caller runs. Every
// mutating endpoint refuses it with 400 naming the field and the variable,
// nothing is written, and discovery afterwards never carries the secret,
// while the operator's own placeholder to the same listener is resolved and
// sent (so the listener would see a leaked one).
func TestConfigAdminRefusesEnvVarExfiltration(t *testing.T) {
	const secret = adminCanary + "-db-url"
	const opToken = "operator-token-4b1d"
	rec := newHeaderListener(t) // only for the URL: each case has its own
	doc := `{"mcpServers": {
		"op": {"type": "http", "url": "` + rec.URL + `/op", "headers": {"X-Op": "$ANTLER_TEST_OP_TOKEN"}},
		"leak": {"type": "http", "url": "` + rec.URL + `/leak"}}}`
	leakHeaders := `{"type": "http", "url": "` + rec.URL + `/leak", "headers": {"X-Leak": "$ANTLER_TEST_SECRET_DB_URL"}}`
	for _, tc := range []struct {
		name, method, path, body, field string
	}{
		{"POST header", "POST", "/api/mcp/config/servers", `{"mcp_servers": {"new": ` + leakHeaders + `}}`, "mcpServers.new.headers.X-Leak"},
		{"POST stdio env", "POST", "/api/mcp/config/servers",
			`{"mcp_servers": {"new": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "$ANTLER_TEST_SECRET_DB_URL"}}}}`, "mcpServers.new.env.K"},
		{"POST args", "POST", "/api/mcp/config/servers",
			`{"mcp_servers": {"new": {"command": "npx", "args": ["-y", "pkg", "$ANTLER_TEST_SECRET_DB_URL"]}}}`, "mcpServers.new.args[2]"},
		{"POST url", "POST", "/api/mcp/config/servers",
			`{"mcp_servers": {"new": {"type": "http", "url": "$ANTLER_TEST_SECRET_DB_URL"}}}`, "mcpServers.new.url"},
		{"PUT one header", "PUT", "/api/mcp/config/server", `{"server_name": "leak", "server": ` + leakHeaders + `}`, "mcpServers.leak.headers.X-Leak"},
		{"PUT one oauth extra", "PUT", "/api/mcp/config/server",
			`{"server_name": "leak", "server": {"type": "http", "url": "` + rec.URL + `/leak", "oauth": {"token_url": "` + rec.URL + `/t", "extra_token_params": {"audience": "$ANTLER_TEST_SECRET_DB_URL"}}}}`,
			"mcpServers.leak.oauth.extra_token_params.audience"},
		{"PUT one nested extra", "PUT", "/api/mcp/config/server",
			`{"server_name": "leak", "server": {"type": "http", "url": "` + rec.URL + `/leak", "vendor": {"list": [{"k": "$ANTLER_TEST_SECRET_DB_URL"}]}}}`,
			"mcpServers.leak.vendor.list[0].k"},
		{"whole-set PUT, stored server", "PUT", "/api/mcp/config",
			`{"mcp_servers": {"op": {"type": "http", "url": "` + rec.URL + `/op", "headers": {"X-Op": "***"}}, "leak": ` + leakHeaders + `}}`, "mcpServers.leak.headers.X-Leak"},
		{"whole-set PUT, new server", "PUT", "/api/mcp/config", `{"mcp_servers": {"new": ` + leakHeaders + `}}`, "mcpServers.new.headers.X-Leak"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			own := newHeaderListener(t)
			a := newAdminAPI(t, strings.ReplaceAll(doc, rec.URL, own.URL))
			tc.body = strings.ReplaceAll(tc.body, rec.URL, own.URL)
			rec := own
			t.Setenv("ANTLER_TEST_SECRET_DB_URL", secret)
			t.Setenv("ANTLER_TEST_OP_TOKEN", opToken)
			before := a.file()
			code, res := a.call(tc.method, tc.path, tc.body)
			wantError(t, code, res, 400, tc.field, "$ANTLER_TEST_SECRET_DB_URL", config.EnvAllowlistEnv)
			if strings.Contains(fmt.Sprint(res["error"]), secret) {
				t.Errorf("the error shows the variable's value: %v", res["error"])
			}
			a.unchanged(before)
			if _, err := a.cache.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !rec.saw(opToken) {
				t.Fatal("discovery never sent the operator's resolved header: the listener could not see a leak")
			}
			if rec.saw(secret) {
				t.Fatal("the listener received the host's secret")
			}
		})
	}
}

// The operator's placeholders (in url, headers, env, args, oauth and
// extras) survive a GET → PUT round trip of every endpoint, an edit of
// another field, masked restores and PATCH, with 200.
func TestConfigAdminKeepsOperatorEnvVars(t *testing.T) {
	t.Setenv("ANTLER_TEST_REMOTE_URL", "https://remote.example/mcp")
	t.Setenv("ANTLER_TEST_REMOTE_TOKEN", adminCanary)
	const doc = `{"mcpServers": {
		"remote": {"type": "http", "url": "$ANTLER_TEST_REMOTE_URL", "headers": {"Authorization": "$ANTLER_TEST_REMOTE_TOKEN"},
			"oauth": {"token_url": "https://auth.example/token", "client_id": "$ANTLER_TEST_CLIENT_ID", "client_secret": "$ANTLER_TEST_CLIENT_SECRET",
				"extra_token_params": {"audience": "$ANTLER_TEST_AUDIENCE"}},
			"vendor": {"list": [{"k": "$ANTLER_TEST_VENDOR"}], "note": "$ANTLER_TEST_NOTE"}},
		"local": {"enabled": false, "command": "npx", "args": ["-y", "pkg", "$ANTLER_TEST_DIR"], "env": {"GITHUB_TOKEN": "$GITHUB_TOKEN"}}}}`
	refs := []string{"$ANTLER_TEST_REMOTE_URL", "$ANTLER_TEST_REMOTE_TOKEN", "$ANTLER_TEST_CLIENT_ID", "$ANTLER_TEST_CLIENT_SECRET",
		"$ANTLER_TEST_AUDIENCE", "$ANTLER_TEST_VENDOR", "$ANTLER_TEST_NOTE", "$ANTLER_TEST_DIR", "$GITHUB_TOKEN"}
	keepsRefs := func(a *adminAPI) {
		t.Helper()
		f := a.file()
		for _, r := range refs {
			if !strings.Contains(f, `"`+r+`"`) {
				t.Errorf("%s lost:\n%s", r, f)
			}
		}
	}
	server := func(got map[string]any, name string) map[string]any {
		return got["mcp_servers"].(map[string]any)[name].(map[string]any)
	}

	t.Run("whole-set PUT of GET", func(t *testing.T) {
		a := newAdminAPI(t, doc)
		_, got := a.call("GET", "/api/mcp/config", "")
		if code, res := a.call("PUT", "/api/mcp/config", body(map[string]any{"mcp_servers": got["mcp_servers"]})); code != 200 {
			t.Fatalf("%d %v", code, res)
		}
		keepsRefs(a)
	})
	t.Run("PUT one with another field edited", func(t *testing.T) {
		a := newAdminAPI(t, doc)
		_, got := a.call("GET", "/api/mcp/config", "")
		for _, name := range []string{"remote", "local"} {
			s := server(got, name)
			s["description"] = "edited " + name
			if code, res := a.call("PUT", "/api/mcp/config/server", body(map[string]any{"server_name": name, "server": s})); code != 200 {
				t.Fatalf("%s: %d %v", name, code, res)
			}
		}
		keepsRefs(a)
		if d := a.server("remote")["description"]; d != "edited remote" {
			t.Errorf("description = %v", d)
		}
	})
	t.Run("PATCH", func(t *testing.T) {
		a := newAdminAPI(t, doc)
		for _, en := range []string{"true", "false"} {
			if code, res := a.call("PATCH", "/api/mcp/config", `{"server_name": "remote", "enabled": `+en+`}`); code != 200 {
				t.Fatalf("%d %v", code, res)
			}
		}
		keepsRefs(a)
	})
	t.Run("POST beside stored references", func(t *testing.T) {
		a := newAdminAPI(t, doc)
		if code, res := a.call("POST", "/api/mcp/config/servers", `{"mcp_servers": {"plain": {"type": "http", "url": "https://p.example/mcp", "headers": {"X-A": "Bearer $NOT_A_REFERENCE"}}}}`); code != 200 {
			t.Fatalf("%d %v", code, res)
		}
		keepsRefs(a)
	})
}

// A stored reference does not move: not to another key, another list
// position or another server, and a renamed server is a new one.
func TestConfigAdminRefusesMovedEnvVars(t *testing.T) {
	const doc = `{"mcpServers": {
		"a": {"type": "http", "url": "https://a.example/mcp", "headers": {"Authorization": "$ANTLER_TEST_TOKEN"}},
		"s": {"enabled": false, "command": "npx", "args": ["-y", "pkg", "$ANTLER_TEST_DIR"]}}}`
	for _, tc := range []struct{ name, method, path, body, field string }{
		{"another header", "PUT", "/api/mcp/config/server",
			`{"server_name": "a", "server": {"type": "http", "url": "https://a.example/mcp", "headers": {"X-Other": "$ANTLER_TEST_TOKEN"}}}`, "mcpServers.a.headers.X-Other"},
		{"another field", "PUT", "/api/mcp/config/server",
			`{"server_name": "a", "server": {"type": "http", "url": "https://a.example/mcp", "headers": {"Authorization": "$ANTLER_TEST_TOKEN"}, "description": "$ANTLER_TEST_TOKEN"}}`, "mcpServers.a.description"},
		{"another list position", "PUT", "/api/mcp/config/server",
			`{"server_name": "s", "server": {"enabled": false, "command": "npx", "args": ["-y", "$ANTLER_TEST_DIR", "pkg"]}}`, "mcpServers.s.args[1]"},
		{"another server", "PUT", "/api/mcp/config",
			`{"mcp_servers": {"a": {"type": "http", "url": "https://a.example/mcp", "headers": {"Authorization": "***"}}, "s": {"enabled": false, "command": "npx", "args": ["-y", "pkg", "$ANTLER_TEST_DIR"]},
				"b": {"type": "http", "url": "https://b.example/mcp", "headers": {"Authorization": "$ANTLER_TEST_TOKEN"}}}}`, "mcpServers.b.headers.Authorization"},
		{"renamed server", "PUT", "/api/mcp/config",
			`{"mcp_servers": {"renamed": {"type": "http", "url": "https://a.example/mcp", "headers": {"Authorization": "$ANTLER_TEST_TOKEN"}}}}`, "mcpServers.renamed.headers.Authorization"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdminAPI(t, doc)
			before := a.file()
			code, res := a.call(tc.method, tc.path, tc.body)
			wantError(t, code, res, 400, tc.field+": ", "$ANTLER_TEST_")
			a.unchanged(before)
		})
	}
}

// A name the operator allowlisted may be introduced, through the
// environment variable (read per request by a bare gateway) or the option
// the binary fills at start-up (which then wins).
func TestConfigAdminAllowlistedEnvVar(t *testing.T) {
	const post = `{"mcp_servers": {"gh": {"type": "http", "url": "https://gh.example/mcp", "headers": {"Authorization": "$ANTLER_TEST_GH_TOKEN"}}}}`
	t.Run("environment", func(t *testing.T) {
		a := newAdminAPI(t, `{"mcpServers": {}}`)
		t.Setenv(config.EnvAllowlistEnv, " OTHER , ANTLER_TEST_GH_TOKEN")
		if code, res := a.call("POST", "/api/mcp/config/servers", post); code != 200 {
			t.Fatalf("%d %v", code, res)
		}
		if h := a.server("gh")["headers"].(map[string]any)["Authorization"]; h != "$ANTLER_TEST_GH_TOKEN" {
			t.Errorf("stored header = %v", h)
		}
	})
	t.Run("option", func(t *testing.T) {
		t.Setenv(config.EnvAllowlistEnv, "ANTLER_TEST_GH_TOKEN") // ignored: the option decides
		path := filepath.Join(t.TempDir(), "extensions_config.json")
		if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		cache := toolcache.New(toolcache.Options{ConfigPath: path})
		t.Cleanup(cache.Close)
		for _, tc := range []struct {
			allow []string
			want  int
		}{{nil, 400}, {[]string{"ANTLER_TEST_GH_TOKEN"}, 200}} {
			allow := config.NewEnvAllowlist(tc.allow...)
			srv := httptest.NewServer(testgateway.New(t, gateway.Options{
				Cache: cache, Auth: principal.New([]settings.Key{{Key: "admin", User: "root", Role: settings.RoleAdmin}}),
				Admin: configadmin.New(configadmin.Options{Tools: cache, File: configfile.New(path, slog.New(slog.DiscardHandler)),
					LaunchPolicy: launchpolicy.New(), EnvAllowlist: &allow}),
			}).Handler())
			a := &api{t: t, url: srv.URL, key: "admin"}
			if code, res := a.do("POST", "/api/mcp/config/servers", post); code != tc.want {
				t.Errorf("allowlist %v: %d %v, want %d", tc.allow, code, res, tc.want)
			}
			srv.Close()
		}
	})
}
