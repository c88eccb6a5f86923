package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
)

// TestSessionsPerPrincipalAreCapped: one caller's initialize past the cap
// is 429; another caller is unaffected; ending a session frees its place.
func TestSessionsPerPrincipalAreCapped(t *testing.T) {
	door := mcpserver.New(mcpserver.Options{MaxSessionsPerPrincipal: 2})
	t.Cleanup(door.Close)
	// The gateway's part, reduced: the X-User header is the principal.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal.Principal{User: r.Header.Get("X-User"), Role: settings.RoleAgent}
		door.Streamable().ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	h := &host{t: t, url: srv.URL}
	initialize := func(user string) (int, string) {
		resp, _ := h.rawPost(map[string]string{"X-User": user},
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cap","version":"1"}}}`)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	var ids []string
	for i := range 2 {
		code, id := initialize("alice")
		if code != 200 || id == "" {
			t.Fatalf("alice's session %d: %d", i+1, code)
		}
		ids = append(ids, id)
	}
	if code, _ := initialize("alice"); code != http.StatusTooManyRequests {
		t.Errorf("alice's third session: %d, want 429", code)
	}
	if code, _ := initialize("bob"); code != 200 {
		t.Errorf("bob's first session: %d", code)
	}
	req, _ := http.NewRequest("DELETE", srv.URL+"/mcp", strings.NewReader(""))
	req.Header.Set("X-User", "alice")
	req.Header.Set("Mcp-Session-Id", ids[0])
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if code, _ := initialize("alice"); code != 200 {
		t.Errorf("alice after ending one: %d, want 200", code)
	}
}

// TestAbandonedInitializeFreesItsPlace: an initialize whose client went
// away before the answer (mcp-go then never registers the session it
// minted) holds no place under the cap, so a caller whose connections
// dropped mid-handshake can still open sessions.
func TestAbandonedInitializeFreesItsPlace(t *testing.T) {
	door := mcpserver.New(mcpserver.Options{MaxSessionsPerPrincipal: 2})
	t.Cleanup(door.Close)
	alice := principal.Principal{User: "alice", Role: settings.RoleAgent}
	const body = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cap","version":"1"}}}`
	initialize := func(abandoned bool) int {
		ctx := principal.NewContext(context.Background(), alice)
		if abandoned {
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			cancel() // the client is gone before the answer
		}
		req := httptest.NewRequestWithContext(ctx, "POST", "http://127.0.0.1/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		door.Streamable().ServeHTTP(rec, req)
		return rec.Code
	}
	for range 3 {
		initialize(true)
	}
	for i := range 2 {
		if code := initialize(false); code != http.StatusOK {
			t.Fatalf("alice's session %d after three abandoned handshakes: %d, want 200", i+1, code)
		}
	}
	if code := initialize(false); code != http.StatusTooManyRequests {
		t.Errorf("alice's third live session: %d, want 429", code)
	}
}
