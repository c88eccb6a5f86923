package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/metrics"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// TestPprof: the profiles are not routed unless Options.Pprof is set, and
// then only an admin gets them; the same holds for the metrics
// (Options.Metrics).
func TestPprof(t *testing.T) {
	keys := []settings.Key{{Key: "admin-key", User: "root", Role: settings.RoleAdmin}, {Key: "agent-key", User: "alice", Role: settings.RoleAgent}}
	for _, tc := range []struct {
		name    string
		pprof   bool
		metrics bool
		key     string
		path    string
		code    int
		want    string // in the body
	}{
		{"off: admin", false, false, "admin-key", "/debug/pprof/", http.StatusNotFound, ""},
		{"off: named profile", false, false, "admin-key", "/debug/pprof/heap", http.StatusNotFound, ""},
		{"on: no key", true, false, "", "/debug/pprof/", http.StatusUnauthorized, ""},
		{"on: agent", true, false, "agent-key", "/debug/pprof/", http.StatusForbidden, "Admin privileges required"},
		{"on: agent, named profile", true, false, "agent-key", "/debug/pprof/goroutine?debug=1", http.StatusForbidden, "Admin privileges required"},
		{"on: agent, cmdline", true, false, "agent-key", "/debug/pprof/cmdline", http.StatusForbidden, "Admin privileges required"},
		{"on: admin index", true, false, "admin-key", "/debug/pprof/", http.StatusOK, "goroutine"},
		{"on: admin named profile", true, false, "admin-key", "/debug/pprof/goroutine?debug=1", http.StatusOK, "goroutine profile"},
		{"metrics off", false, false, "admin-key", "/metrics", http.StatusNotFound, ""},
		{"metrics on: no key", false, true, "", "/metrics", http.StatusUnauthorized, ""},
		{"metrics on: agent", false, true, "agent-key", "/metrics", http.StatusForbidden, "Admin privileges required for /metrics."},
		{"metrics on: admin", false, true, "admin-key", "/metrics", http.StatusOK, "go_goroutines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "extensions_config.json")
			if err := os.WriteFile(path, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			cache := toolcache.New(toolcache.Options{ConfigPath: path})
			t.Cleanup(cache.Close)
			opts := gateway.Options{Cache: cache, Auth: principal.New(keys), Pprof: tc.pprof}
			if tc.metrics {
				opts.Metrics = metrics.New().Handler()
			}
			srv := httptest.NewServer(testgateway.New(t, opts).Handler())
			t.Cleanup(srv.Close)
			req, err := http.NewRequest("GET", srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.want) {
				t.Fatalf("GET %s: %d %q, want %d with %q", tc.path, resp.StatusCode, body, tc.code, tc.want)
			}
		})
	}
}
