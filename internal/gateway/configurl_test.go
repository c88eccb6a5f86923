package gateway_test

import (
	"strings"
	"testing"
)

// A server URL and an OAuth token URL that carry credentials (user info and
// token query values) read masked through the real admin API; sending the
// masked form back restores them from the file, an edited URL on the same
// host gets them back in place, and a URL moved to another host, or a new
// server, cannot keep a placeholder. The canary never reaches a response or
// a log line (newAdminAPI checks).
func TestConfigAdminMasksURLSecrets(t *testing.T) {
	const (
		url      = "https://svc:" + adminCanary + "-pw@mcp.example/mcp?a=1&api_key=" + adminCanary + "-q#frag"
		masked   = "https://svc:***@mcp.example/mcp?a=1&api_key=***#frag"
		tokenURL = "https://auth.example/token?client_secret=" + adminCanary + "-cs&aud=x"
		tokenMsk = "https://auth.example/token?client_secret=***&aud=x"
	)
	a := newAdminAPI(t, `{"mcpServers": {"remote": {"enabled": false, "type": "http", "url": "`+url+`",
		"oauth": {"token_url": "`+tokenURL+`", "client_id": "id"}}}}`)
	get := func() map[string]any {
		t.Helper()
		code, got := a.call("GET", "/api/mcp/config", "")
		if code != 200 {
			t.Fatalf("GET: %d %v", code, got)
		}
		return got["mcp_servers"].(map[string]any)
	}
	servers := get()
	remote := servers["remote"].(map[string]any)
	if remote["url"] != masked || remote["oauth"].(map[string]any)["token_url"] != tokenMsk {
		t.Fatalf("GET url %q, token_url %q; want %q, %q", remote["url"], remote["oauth"].(map[string]any)["token_url"], masked, tokenMsk)
	}

	t.Run("the masked form sent back restores the stored URLs", func(t *testing.T) {
		if code, res := a.call("PUT", "/api/mcp/config", body(map[string]any{"mcp_servers": servers})); code != 200 {
			t.Fatalf("PUT: %d %v", code, res)
		}
		s := a.server("remote")
		if s["url"] != url || s["oauth"].(map[string]any)["token_url"] != tokenURL {
			t.Errorf("stored url %q, token_url %q after a round trip", s["url"], s["oauth"].(map[string]any)["token_url"])
		}
	})
	t.Run("an edited URL on the same host keeps its secrets", func(t *testing.T) {
		one := get()["remote"].(map[string]any)
		one["url"] = strings.Replace(masked, "/mcp?a=1", "/v2/mcp?a=2", 1)
		if code, res := a.call("PUT", "/api/mcp/config/server", body(map[string]any{"server_name": "remote", "server": one})); code != 200 {
			t.Fatalf("PUT server: %d %v", code, res)
		}
		want := strings.Replace(url, "/mcp?a=1", "/v2/mcp?a=2", 1)
		if got := a.server("remote")["url"]; got != want {
			t.Errorf("stored url %q, want %q", got, want)
		}
	})
	t.Run("a URL moved to another host cannot keep a placeholder", func(t *testing.T) {
		before := a.file()
		s := get()
		s["remote"].(map[string]any)["url"] = strings.Replace(masked, "mcp.example", "attacker.example", 1)
		code, res := a.call("PUT", "/api/mcp/config", body(map[string]any{"mcp_servers": s}))
		wantError(t, code, res, 400, "url", "scheme or host changes")
		a.unchanged(before)
	})
	t.Run("a new server cannot persist a placeholder", func(t *testing.T) {
		before := a.file()
		s := get()
		s["other"] = map[string]any{"enabled": false, "type": "http", "url": "https://u:***@other.example/mcp"}
		code, res := a.call("PUT", "/api/mcp/config", body(map[string]any{"mcp_servers": s}))
		wantError(t, code, res, 400, "url")
		a.unchanged(before)
	})
}
