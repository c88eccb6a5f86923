package mcpserver_test

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/settings"
)

// TestThreadPerUser: under ThreadPerUser a call that names no thread runs
// in its user's default thread, whatever door or revision carries it:
// every session of alice (2025-11-25, legacy SSE, 2026-07-28) and her REST
// calls without thread_id reach one stdio process, which outlives the
// sessions that ended. Bob's sessions never reach it, and a named thread
// still has its own.
func TestThreadPerUser(t *testing.T) {
	h := newHostWith(t, func(o *mcpserver.Options) { o.DefaultThread = mcpserver.ThreadPerUser },
		settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent},
		settings.Key{Key: "kb", User: "bob", Role: settings.RoleAgent},
		settings.Key{Key: "kadm", User: "root", Role: settings.RoleAdmin})
	h.admin = "kadm"
	whoami := func(c *client.Client, meta map[string]any) float64 {
		return pid(t, call(t, c, "stdio_whoami", map[string]any{}, meta))
	}

	first, second := h.client("2025-11-25", "ka"), h.client("2025-11-25", "ka")
	shared := whoami(first, nil)
	for name, c := range map[string]*client.Client{
		"a second 2025-11-25 session": second,
		"a legacy SSE session":        h.sseClient("ka"),
		"a 2026-07-28 client":         h.client("2026-07-28", "ka"),
	} {
		if got := whoami(c, nil); got != shared {
			t.Errorf("%s ran in process %v, the first session in %v", name, got, shared)
		}
	}
	if got := h.restPID("ka", ""); got != shared {
		t.Errorf("a REST call without thread_id ran in process %v, the sessions in %v", got, shared)
	}
	if got := whoami(first, map[string]any{mcpserver.MetaThreadID: "t1"}); got == shared {
		t.Errorf("the named thread t1 shares the default thread's process %v", got)
	}
	bob := whoami(h.client("2025-11-25", "kb"), nil)
	if bob == shared {
		t.Fatalf("bob's session runs in alice's process %v", bob)
	}
	if n := h.stdioSessions(); n != 3 {
		t.Errorf("%d stdio sessions, want 3 (alice's default, alice's t1, bob's default)", n)
	}

	// The first session's end leaves the shared process to the others.
	if err := first.Close(); err != nil { // DELETE /mcp
		t.Fatal(err)
	}
	if n := h.stdioSessions(); n != 3 {
		t.Errorf("%d stdio sessions after a session ended, want 3", n)
	}
	if got := whoami(second, nil); got != shared {
		t.Errorf("after the first session ended the second ran in process %v, was %v", got, shared)
	}
}

// sseClient starts a legacy HTTP+SSE (2024-11-05) client with key.
func (h *host) sseClient(key string) *client.Client {
	h.t.Helper()
	var opts []transport.ClientOption
	if key != "" {
		opts = append(opts, transport.WithHeaders(map[string]string{"Authorization": "Bearer " + key}))
	}
	c, err := client.NewSSEMCPClient(h.url+"/sse", opts...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	ctx := h.ctx()
	if err := c.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2024-11-05"
	init.Params.ClientInfo = mcp.Implementation{Name: "sse", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		h.t.Fatal(err)
	}
	return c
}

// restPID is the stdio process a REST call of stdio_whoami with key ran in
// (thread "" names none).
func (h *host) restPID(key, thread string) float64 {
	h.t.Helper()
	body, _ := json.Marshal(map[string]any{"arguments": map[string]any{}, "thread_id": thread})
	code, out := h.rest("POST", "/api/mcp/tools/stdio_whoami/call", key, string(body))
	var res struct {
		StructuredContent struct {
			PID float64 `json:"pid"`
		} `json:"structuredContent"`
	}
	if code != 200 || json.Unmarshal(out, &res) != nil || res.StructuredContent.PID == 0 {
		h.t.Fatalf("REST whoami: %d %s", code, out)
	}
	return res.StructuredContent.PID
}
