package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// askUpstream is a 2025-11-25 upstream over streamable HTTP whose tool
// "ask" asks its caller a question and answers "answered" once it has the
// reply. It counts the calls started and in flight, and reports each end.
type askUpstream struct {
	url      string
	started  atomic.Int64
	inflight atomic.Int64
	ended    chan struct{}
}

func newAskUpstream(t *testing.T) *askUpstream {
	t.Helper()
	u := &askUpstream{ended: make(chan struct{}, 16)}
	srv := server.NewMCPServer("asker", "1", server.WithElicitation())
	srv.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.started.Add(1)
		u.inflight.Add(1)
		defer func() { u.inflight.Add(-1); u.ended <- struct{}{} }()
		if _, err := srv.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{Message: "q", RequestedSchema: map[string]any{"type": "object"}}}); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText("answered"), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(srv))
	t.Cleanup(ts.Close)
	u.url = ts.URL + "/mcp"
	return u
}

// config writes an extensions config naming the upstream "asker".
func (u *askUpstream) config(t *testing.T) *toolcache.Cache {
	t.Helper()
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"asker": map[string]any{"type": "http", "url": u.url, "protocol_version": "2025-11-25"}}})
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	return cache
}

const answered = `"inputResponses":{"antler":{"action":"accept","content":{}}},`

// TestRoundsHoldTheirCallSlot: a 2026-07-28 call suspended on its
// client's answer holds one of http.per_principal.max_concurrent_calls
// until its upstream call ends, so a caller cannot pile up upstream calls
// by leaving rounds unanswered; its retries take no slot of their own, and
// the slot is free again once the call's result is in.
func TestRoundsHoldTheirCallSlot(t *testing.T) {
	up := newAskUpstream(t)
	gw := testgateway.New(t, gateway.Options{Cache: up.config(t), HTTP: gateway.HTTPOptions{MaxCallsPerPrincipal: 2},
		Auth: principal.New([]settings.Key{{Key: "ka", User: "alice", Role: settings.RoleAgent}, {Key: "kb", User: "bob", Role: settings.RoleAgent}})})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { gw.Close(); srv.Close() })
	as := func(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

	var states []string
	for i := range 2 {
		got := modernPost(t, srv.URL, as("ka"), "asker_ask", "")
		m := requestState.FindStringSubmatch(got)
		if m == nil || !strings.Contains(got, `"input_required"`) {
			t.Fatalf("alice's round %d: %s, want an input request", i+1, got)
		}
		states = append(states, m[1])
	}
	for i := range 3 {
		if got := modernPost(t, srv.URL, as("ka"), "asker_ask", ""); !strings.Contains(got, "max_concurrent_calls") || !strings.Contains(got, `"isError":true`) {
			t.Fatalf("alice's call %d past the cap: %s, want it refused", i+3, got)
		}
	}
	// The slots are the gateway's, shared by both doors: with both of
	// alice's held by /mcp rounds, her REST call is refused too.
	req, _ := http.NewRequest("POST", srv.URL+"/api/mcp/tools/asker_ask/call", strings.NewReader(`{"arguments": {}}`))
	req.Header.Set("Authorization", "Bearer ka")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "max_concurrent_calls") {
		t.Fatalf("alice's REST call with her slots held on /mcp: %d %s, want 429", resp.StatusCode, body)
	}
	if started, inflight := up.started.Load(), up.inflight.Load(); started != 2 || inflight != 2 {
		t.Fatalf("upstream calls started %d, in flight %d; want 2 and 2 (the cap)", started, inflight)
	}
	if got := modernPost(t, srv.URL, as("kb"), "asker_ask", ""); !strings.Contains(got, `"input_required"`) {
		t.Errorf("bob's first round: %s, want an input request (alice's cap is hers)", got)
	}
	// Both of alice's slots are held: her retry needs none.
	if got := modernPost(t, srv.URL, as("ka"), "asker_ask", `"requestState":"`+states[0]+`",`+answered); !strings.Contains(got, "answered") || strings.Contains(got, `"isError":true`) {
		t.Fatalf("alice's retry: %s, want the upstream's result", got)
	}
	if got := modernPost(t, srv.URL, as("ka"), "asker_ask", ""); !strings.Contains(got, `"input_required"`) {
		t.Errorf("alice's call after one ended: %s, want an input request", got)
	}
	if started := up.started.Load(); started != 4 {
		t.Errorf("upstream calls started %d, want 4", started)
	}
}

// TestSuspendedRoundsAreCapped: without a call cap, the calls one caller
// holds suspended are still capped (Options.MaxRoundsPerPrincipal); the
// call past it gets an error result and its upstream call is cancelled,
// and another caller is unaffected.
func TestSuspendedRoundsAreCapped(t *testing.T) {
	up := newAskUpstream(t)
	door := mcpserver.New(mcpserver.Options{Cache: up.config(t), MaxRoundsPerPrincipal: 1})
	t.Cleanup(door.Close)
	// The gateway's part, reduced: the X-User header is the principal.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal.Principal{User: r.Header.Get("X-User"), Role: settings.RoleAgent}
		door.Streamable().ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	as := func(user string) map[string]string { return map[string]string{"X-User": user} }

	if got := modernPost(t, srv.URL, as("alice"), "asker_ask", ""); !strings.Contains(got, `"input_required"`) {
		t.Fatalf("alice's first round: %s", got)
	}
	if got := modernPost(t, srv.URL, as("alice"), "asker_ask", ""); !strings.Contains(got, "too many calls waiting for input") || !strings.Contains(got, `"isError":true`) {
		t.Fatalf("alice's second call: %s, want it refused", got)
	}
	select {
	case <-up.ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the refused call's upstream call was never cancelled")
	}
	if inflight := up.inflight.Load(); inflight != 1 {
		t.Errorf("upstream calls in flight %d, want alice's one suspended call", inflight)
	}
	if got := modernPost(t, srv.URL, as("bob"), "asker_ask", ""); !strings.Contains(got, `"input_required"`) {
		t.Errorf("bob's first round: %s, want an input request", got)
	}
}
