package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
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

// TestEveryInitializeIsCapped performs the ways past the cap an attacker
// had, each for a caller already at it: an initialize carrying one of its
// own session ids (mcp-go opens a new session for every initialize,
// whatever header it comes with, and the cap looked only at those without
// one), and an initialize whose method is spelled with escapes. And a
// burst of initializes sent at once by a caller with no session opens no
// more than the cap: each checked it alone, before any had minted, so the
// burst could pass it (a race this test makes likely, not certain: about
// one run in ten opened a third session before the check reserved its
// place).
func TestEveryInitializeIsCapped(t *testing.T) {
	const limit = 2
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"cap","version":"1"}}}`
	newHost := func(t *testing.T) (*host, *mcpserver.Server) {
		door := mcpserver.New(mcpserver.Options{MaxSessionsPerPrincipal: limit})
		t.Cleanup(door.Close)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := principal.Principal{User: "alice", Role: settings.RoleAgent}
			door.Streamable().ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
		}))
		t.Cleanup(srv.Close)
		return &host{t: t, url: srv.URL}, door
	}
	initialize := func(h *host, hdr map[string]string, msg string) (int, string) {
		resp, _ := h.rawPost(hdr, msg)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	atCap := func(t *testing.T, h *host) []string {
		var ids []string
		for i := range limit {
			code, id := initialize(h, nil, init)
			if code != 200 || id == "" {
				t.Fatalf("session %d: %d", i+1, code)
			}
			ids = append(ids, id)
		}
		return ids
	}
	for _, tc := range []struct {
		name string
		hdr  func(ids []string) map[string]string
		msg  string
	}{
		{"with its own session's id", func(ids []string) map[string]string {
			return map[string]string{"Mcp-Session-Id": ids[0], "Mcp-Protocol-Version": "2025-11-25"}
		}, init},
		{"spelled with escapes", func([]string) map[string]string { return nil },
			strings.Replace(init, `"initialize"`, `"\u0069nitial\u0069ze"`, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := newHost(t)
			ids := atCap(t, h)
			for i := range 5 {
				if code, id := initialize(h, tc.hdr(ids), tc.msg); code != http.StatusTooManyRequests {
					t.Fatalf("initialize %d past the cap: %d (session %q), want 429", i+1, code, id)
				}
			}
		})
	}
	t.Run("sent at once", func(t *testing.T) {
		h, _ := newHost(t)
		const burst = 40
		var wg sync.WaitGroup
		var opened atomic.Int32
		start := make(chan struct{})
		for range burst {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if code, id := initialize(h, nil, init); code == 200 && id != "" {
					opened.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if n := opened.Load(); n != limit {
			t.Fatalf("%d initializes sent at once opened %d sessions, want the cap's %d", burst, n, limit)
		}
	})
}
