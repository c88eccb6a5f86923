package upstream_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/upstream"
)

// TestSessionEndCarriesTheHeaders: closing a streamable HTTP connection
// ends its session upstream with the connection's headers, so an upstream
// that requires a key accepts the DELETE instead of keeping the session
// until its idle timeout (mcp-go's client sends it without them).
func TestSessionEndCarriesTheHeaders(t *testing.T) {
	mcp := server.NewStreamableHTTPServer(server.NewMCPServer("keyed", "1"))
	var deleted, refused atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Key") != "k" {
			if r.Method == http.MethodDelete {
				refused.Add(1)
			}
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodDelete {
			deleted.Add(1)
		}
		mcp.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c := dial(t, &config.Server{Name: "keyed", Type: config.TransportHTTP, URL: ts.URL + "/mcp", ProtocolVersion: "2025-11-25",
		Headers: config.Pairs{{Key: "X-Key", Value: "k"}}}, upstream.Options{})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if deleted.Load() != 1 || refused.Load() != 0 {
		t.Errorf("session ends accepted %d, refused %d; want 1 and 0", deleted.Load(), refused.Load())
	}
}
