package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
)

// TestConfigAdminEnvVarExfiltration runs the reproduced attack against the
// real binary: a config API request adds an HTTP server whose header is
// "$<host secret variable>", aimed at a loopback listener that records
// every header. The host refuses it with 400 and the listener never sees
// the secret, while the operator's own placeholder and a name the operator
// allowlisted at start-up (ANTLER_CONFIG_API_ENV_ALLOWLIST) are resolved and
// delivered to the same listener.
func TestConfigAdminEnvVarExfiltration(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the host")
	}
	const secret = "host-secret-db-url-9e1f"
	t.Setenv("ANTLER_TEST_SECRET_DB_URL", secret)
	t.Setenv("ANTLER_TEST_OP_TOKEN", "operator-token-77aa")
	t.Setenv("ANTLER_TEST_ALLOWED", "allowed-token-3c2d")
	t.Setenv(config.EnvAllowlistEnv, "ANTLER_TEST_ALLOWED")

	var mu sync.Mutex
	var seen []string
	allowed := make(chan struct{})
	var once sync.Once
	ln := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		for name, vs := range r.Header {
			seen = append(seen, name+": "+strings.Join(vs, ","))
		}
		mu.Unlock()
		if r.Header.Get("X-Allowed") == "allowed-token-3c2d" {
			once.Do(func() { close(allowed) })
		}
		http.Error(w, "not an MCP server", http.StatusNotFound)
	}))
	defer ln.Close()
	saw := func(s string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range seen {
			if strings.Contains(v, s) {
				return true
			}
		}
		return false
	}

	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	cfg := filepath.Join(dir, "extensions_config.json")
	doc := `{"mcpServers": {"op": {"type": "http", "url": "` + ln.URL + `/op", "headers": {"X-Op": "$ANTLER_TEST_OP_TOKEN"}}}}`
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	host := startServe(t, antler, "--config", cfg, "--data", filepath.Join(dir, "data"))

	server := func(header string) string {
		return `{"type": "http", "url": "` + ln.URL + `/x", "headers": {"X-Leak": "` + header + `"}}`
	}
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/api/mcp/config/servers", `{"mcp_servers": {"leak": ` + server("$ANTLER_TEST_SECRET_DB_URL") + `}}`},
		{"PUT", "/api/mcp/config/server", `{"server_name": "op", "server": ` + server("$ANTLER_TEST_SECRET_DB_URL") + `}`},
		{"PUT", "/api/mcp/config", `{"mcp_servers": {"op": {"type": "http", "url": "` + ln.URL + `/op", "headers": {"X-Op": "***"}}, "leak": ` + server("$ANTLER_TEST_SECRET_DB_URL") + `}}`},
	} {
		code, res := host.do(r.method, r.path, r.body)
		if msg, _ := res["error"].(string); code != 400 || !strings.Contains(msg, "X-Leak") || !strings.Contains(msg, "$ANTLER_TEST_SECRET_DB_URL") || strings.Contains(msg, secret) {
			t.Errorf("%s %s: %d %v, want 400 naming the field and variable", r.method, r.path, code, res)
		}
	}
	if got, _ := os.ReadFile(cfg); string(got) != doc {
		t.Fatalf("a refused request changed the file:\n%s", got)
	}

	// The allowlisted name is accepted and delivered: discovery of the new
	// server reaches the listener with the resolved header.
	code, res := host.do("POST", "/api/mcp/config/servers",
		`{"mcp_servers": {"ok": {"type": "http", "url": "`+ln.URL+`/ok", "headers": {"X-Allowed": "$ANTLER_TEST_ALLOWED"}}}}`)
	if code != 200 {
		t.Fatalf("allowlisted reference: %d %v", code, res)
	}
	host.do("GET", "/api/mcp/tools", "")
	<-allowed
	if !saw("operator-token-77aa") {
		t.Error("the operator's placeholder never reached the listener")
	}
	if saw(secret) {
		t.Fatal("the listener received the host's secret")
	}
}
