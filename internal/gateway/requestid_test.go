package gateway_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// TestRequestIDs: every answer carries an X-Request-ID, the caller's when
// it is well formed, a fresh one otherwise, never the same twice; the
// request's log line names the id its answer carries.
func TestRequestIDs(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, `{"mcpServers": {}}`)})
	t.Cleanup(cache.Close)
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil), Logger: log}).Handler())
	t.Cleanup(srv.Close)

	get := func(sent string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/mcp/servers", nil)
		if err != nil {
			t.Fatal(err)
		}
		if sent != "" {
			req.Header.Set("X-Request-ID", sent)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		id := resp.Header.Get("X-Request-ID")
		if !strings.Contains(logs.String(), "request_id="+id+" ") {
			t.Errorf("no log line names request %q:\n%s", id, logs.String())
		}
		return id
	}
	made := regexp.MustCompile(`^[0-9a-f]{24}$`)
	seen := map[string]bool{}
	for _, sent := range []string{"", "", "bad id", strings.Repeat("a", 65), "x\ty", "é"} {
		id := get(sent)
		if !made.MatchString(id) {
			t.Errorf("sent %q: made id %q, want 24 hex digits", sent, id)
		}
		if seen[id] {
			t.Errorf("sent %q: id %q was made twice", sent, id)
		}
		seen[id] = true
	}
	for _, sent := range []string{"abc-123.X_y", strings.Repeat("b", 64)} {
		if id := get(sent); id != sent {
			t.Errorf("sent a well-formed %q, answer carries %q", sent, id)
		}
	}
}
