package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/settings"
)

func TestGetConfigMasksSecretsAndKeepsPlaceholders(t *testing.T) {
	t.Setenv("SEARCH_URL", "http://resolved.example/mcp")
	t.Setenv("SECRET_KEY", "resolved-secret-value")
	a := newAPI(t, `{"mcpServers": {
	  "search": {"enabled": false, "type": "http", "url": "$SEARCH_URL",
	    "headers": {"X-Api-Key": "$SECRET_KEY"},
	    "oauth": {"token_url": "https://auth/token", "client_id": "id", "client_secret": "literal-secret", "extra_token_params": {"resource": "r"}},
	    "user_auth": {"users": {"alice": "Bearer alice-token"}, "apiToken": "x"},
	    "headers_from_context": {"headers": {"X-Tenant-Token": "tenant"}},
	    "apiKey": "top-level-secret",
	    "nested": {"note": "visible", "inner": {"password": "deep-secret"}, "list": [{"client_secret": "in-list"}]},
	    "tools": {"q": {"routing": {"mode": "prefer"}, "authToken": "tool-secret"}}},
	  "local": {"enabled": false, "command": "npx", "args": ["-y", "$PKG"], "env": {"GITHUB_TOKEN": "$GITHUB_TOKEN"}}
	}, "skills": {"s": {"enabled": true}}}`,
		settings.Key{Key: "admin", User: "root", Role: settings.RoleAdmin},
		settings.Key{Key: "agent", User: "alice", Role: settings.RoleAgent})

	if code, res := a.as("agent").do("GET", "/api/mcp/config", ""); code != 403 || res["error"] != "Admin privileges required to manage MCP configuration." {
		t.Errorf("agent: %d %v", code, res)
	}
	code, res := a.as("admin").do("GET", "/api/mcp/config", "")
	if code != 200 {
		t.Fatalf("%d %v", code, res)
	}
	raw, _ := json.Marshal(res)
	body := string(raw)
	for _, secret := range []string{"resolved", "literal-secret", "alice-token", "top-level-secret", "deep-secret", "in-list", "tool-secret"} {
		if strings.Contains(body, secret) {
			t.Errorf("GET config shows %q:\n%s", secret, body)
		}
	}
	servers := res["mcp_servers"].(map[string]any)
	search := servers["search"].(map[string]any)
	check := func(what string, got, want any) {
		t.Helper()
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Errorf("%s = %s, want %s", what, g, w)
		}
	}
	check("url placeholder", search["url"], "$SEARCH_URL")
	check("headers", search["headers"], map[string]string{"X-Api-Key": "***"})
	oauth := search["oauth"].(map[string]any)
	check("client_secret", oauth["client_secret"], nil)
	check("client_id", oauth["client_id"], "id")
	check("extra_token_params", oauth["extra_token_params"], map[string]string{"resource": "***"})
	check("user_auth.users", search["user_auth"].(map[string]any)["users"], map[string]string{"alice": "***"})
	check("user_auth extra", search["user_auth"].(map[string]any)["apiToken"], "***")
	check("headers_from_context unmasked", search["headers_from_context"].(map[string]any)["headers"], map[string]string{"X-Tenant-Token": "tenant"})
	check("apiKey", search["apiKey"], "***")
	check("nested", search["nested"], map[string]any{"note": "visible", "inner": map[string]any{"password": "***"}, "list": []any{map[string]any{"client_secret": "***"}}})
	check("tool extra", search["tools"].(map[string]any)["q"].(map[string]any)["authToken"], "***")
	local := servers["local"].(map[string]any)
	check("args placeholders", local["args"], []string{"-y", "$PKG"})
	check("env", local["env"], map[string]string{"GITHUB_TOKEN": "***"})
	check("defaults", []any{local["session_init_timeout"], local["tool_name_prefix"], local["type"]}, []any{60, true, "stdio"})
}
