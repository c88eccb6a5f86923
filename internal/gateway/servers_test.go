package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// TestServersHidesHostInternalsFromAgents: bob's call starts a pooled stdio
// session of the real demo server; alice, another agent, reads
// /api/mcp/servers and gets neither the config file's path nor a session
// count (hers or anyone's), while an admin gets both.
func TestServersHidesHostInternalsFromAgents(t *testing.T) {
	cfg := writeTemp(t, fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q},
		"gone": {"command": "/opt/secret-vendor/bin/mcp-server"},
		"down": {"type": "http", "url": "http://127.0.0.1:1/internal/admin/mcp"}}}`, testmcp.Build(t)))
	cache := toolcache.New(toolcache.Options{ConfigPath: cfg, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	auth := principal.New([]settings.Key{
		{Key: "admin-key", User: "root", Role: settings.RoleAdmin},
		{Key: "alice-key", User: "alice", Role: settings.RoleAgent},
		{Key: "bob-key", User: "bob", Role: settings.RoleAgent},
	})
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: auth}).Handler())
	t.Cleanup(srv.Close)
	a := &api{t: t, url: srv.URL}

	if code, res := a.as("bob-key").do("POST", "/api/mcp/tools/demo_echo/call", `{"arguments": {"message": "hi"}, "thread_id": "b1"}`); code != 200 || text(res) != "Echo: hi" {
		t.Fatalf("bob's call: %d %v", code, res)
	}

	raw := func(key string) string {
		req, _ := http.NewRequest("GET", srv.URL+"/api/mcp/servers", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for _, key := range []string{"alice-key", "bob-key"} {
		t.Run("agent "+key, func(t *testing.T) {
			body := raw(key)
			if strings.Contains(body, cfg) || strings.Contains(body, "config_path") || strings.Contains(body, "sessions") ||
				strings.Contains(body, "secret-vendor") || strings.Contains(body, "internal/admin") || strings.Contains(body, "127.0.0.1") {
				t.Errorf("an agent saw host internals: %s", body)
			}
			code, res := a.as(key).do("GET", "/api/mcp/servers", "")
			servers, _ := res["servers"].([]any)
			if code != 200 || len(servers) != 3 || servers[0].(map[string]any)["state"] != "connected" || servers[0].(map[string]any)["tools"] != 8.0 {
				t.Fatalf("agent view: %d %v, want the server's state and tools", code, res)
			}
			for i, want := range map[int]string{1: "the server's process could not be started", 2: "the server refused the connection"} {
				if st := servers[i].(map[string]any); st["state"] != "failed" || st["error"] != want {
					t.Errorf("agent view of a failed server: %v, want the error %q", st, want)
				}
			}
		})
	}
	t.Run("admin", func(t *testing.T) {
		code, res := a.as("admin-key").do("GET", "/api/mcp/servers", "")
		servers, _ := res["servers"].([]any)
		if code != 200 || res["config_path"] != cfg || len(servers) != 3 || servers[0].(map[string]any)["sessions"] != 1.0 {
			t.Fatalf("admin view: %d %v, want config_path and 1 session", code, res)
		}
		if e, _ := servers[1].(map[string]any)["error"].(string); !strings.Contains(e, "/opt/secret-vendor/bin/mcp-server") {
			t.Errorf("admin view of the failed process: %q, want the reason", e)
		}
	})
}
