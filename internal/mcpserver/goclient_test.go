package mcpserver_test

import (
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/antler-mcp/antler/internal/settings"
)

// keyed is an http.RoundTripper that sends the API key on every request,
// the way README tells a Go (mcp-go) client to carry it.
type keyed struct {
	key  string
	next http.RoundTripper
}

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return k.next.RoundTrip(r)
}

// TestGoClientCloseEndsItsSession: an mcp-go client whose HTTP client
// carries the key ends its session on Close. (mcp-go sends the DELETE of
// Close without the headers given with WithHTTPHeaders, so such a
// client's session would stay until it idles out, counting against the
// key's sessions.)
func TestGoClientCloseEndsItsSession(t *testing.T) {
	h := newHost(t, settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent})
	c := h.client("2025-11-25", "", transport.WithHTTPBasicClient(&http.Client{Transport: keyed{key: "ka", next: http.DefaultTransport}}))
	id := c.GetSessionId()
	if id == "" {
		t.Fatal("no session")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	resp, body := h.rawPost(map[string]string{"Authorization": "Bearer ka", "Mcp-Session-Id": id, "Mcp-Protocol-Version": "2025-11-25"},
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the closed session answered %d (%.80s...), want 404: Close did not end it", resp.StatusCode, body)
	}
}
