package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
)

// TestOneUserCannotEvictAnothersEvents performs what one key's sessions
// could do to every other user's resumable events: 64 sessions of 4 MiB
// are four times the store's 64 MiB, and a full store dropped the oldest
// event whoever's it was, so alice's large results pushed out bob's and his
// Last-Event-ID found nothing. A user's sessions now hold at most an eighth
// of the store, their own oldest dropped first. (The door's limits divided
// by 64, as TestBigResultsStayWithinTheEventBudget does.)
func TestOneUserCannotEvictAnothersEvents(t *testing.T) {
	door := doorOver(t, bigResults(), Options{})
	limits := storeLimits{events: DefaultMaxEventsPerSession, sessionBytes: maxSessionEventBytes / 64, totalBytes: maxEventStoreBytes / 64, eventBytes: maxStoredEventBytes / 64}
	door.events.limits = limits
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal.Principal{User: r.Header.Get("X-Review-User"), Role: settings.RoleAgent}
		door.Streamable().ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	open := func(user string) *client.Client {
		tr, err := transport.NewStreamableHTTP(srv.URL+"/mcp", transport.WithHTTPHeaders(map[string]string{"X-Review-User": user}))
		if err != nil {
			t.Fatal(err)
		}
		c := client.NewClient(tr)
		t.Cleanup(func() { _ = c.Close() })
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		init := mcp.InitializeRequest{}
		init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
		init.Params.ClientInfo = mcp.Implementation{Name: user, Version: "1"}
		if _, err := c.Initialize(ctx, init); err != nil {
			t.Fatal(err)
		}
		return c
	}
	call := func(c *client.Client, size int, token string) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "up_big", map[string]any{"size": size}
		req.Params.Meta = &mcp.Meta{ProgressToken: mcp.ProgressToken(token)}
		if _, err := c.CallTool(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	bob := open("bob")
	// The upstream (mcp-go's server) writes its progress notification from
	// a goroutine of its own, which under load can lose the race with the
	// result; a call whose progress came first is answered on an event
	// stream and leaves an event.
	for try := 1; ; try++ {
		call(bob, 1024, fmt.Sprint("bob-", try))
		if events, _, _ := door.events.held(bob.GetSessionId()); events > 0 {
			break
		}
		if try == 20 {
			t.Fatal("none of bob's 20 calls left an event")
		}
	}
	// alice: 2x the global budget over her own sessions, each session within
	// its own budget, all well under the 64 sessions per key.
	size := int(limits.eventBytes) - 1024
	perSession := int(limits.sessionBytes) / size
	sessions := int(2*limits.totalBytes/limits.sessionBytes) + 1
	for s := range sessions {
		c := open("alice")
		for i := range perSession {
			call(c, size, fmt.Sprintf("a-%d-%d", s, i))
		}
	}
	events, bytes, total := door.events.held(bob.GetSessionId())
	t.Logf("alice: %d sessions x %d calls of %d bytes; store holds %d of %d bytes", sessions, perSession, size, total, limits.totalBytes)
	if events == 0 {
		t.Fatalf("bob's session holds %d events (%d bytes) after alice's traffic alone: one user's sessions evicted another user's resumable events from the shared %d-byte budget", events, bytes, limits.totalBytes)
	}
}

// TestRequestsBesidesCallsAreBoundedPerUser performs 48 prompts/get of one
// key sent at once through one legacy SSE session to an upstream that
// holds them: only tools/call took a call slot, and mcp-go answers POST
// /messages at once and runs the request on its own, so all 48 reached the
// upstream together. At most the key's max_concurrent_calls do now, the
// rest are refused, and once they end the key's places are all back.
func TestRequestsBesidesCallsAreBoundedPerUser(t *testing.T) {
	const slots, sent = 2, 48
	var inFlight, peak atomic.Int64
	gate := make(chan struct{})
	up := server.NewMCPServer("slow", "1", server.WithPromptCapabilities(false))
	up.AddTool(mcp.NewTool("noop"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	up.AddPrompt(mcp.NewPrompt("slow"), func(ctx context.Context, _ mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return mcp.NewGetPromptResult("slow", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("ok"))}), nil
	})
	door := doorOver(t, up, Options{CallSlots: principal.NewSlots(slots), StreamSlots: principal.NewSlots(4)})
	mux := http.NewServeMux()
	mux.Handle("/sse", door.SSE())
	mux.Handle("/messages", door.Messages())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal.Principal{User: "alice", Role: settings.RoleAgent}
		mux.ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	c, err := client.NewSSEMCPClient(srv.URL + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2024-11-05"
	init.Params.ClientInfo = mcp.Implementation{Name: "sse", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts.Prompts) != 1 {
		t.Fatalf("prompts %+v", prompts.Prompts)
	}
	var wg sync.WaitGroup
	var refused atomic.Int64
	get := func() error {
		req := mcp.GetPromptRequest{}
		req.Params.Name = prompts.Prompts[0].Name
		_, err := c.GetPrompt(ctx, req)
		return err
	}
	for range sent {
		wg.Go(func() {
			if err := get(); err != nil && strings.Contains(err.Error(), "too many requests in flight") {
				refused.Add(1)
			}
		})
	}
	// Wait until the upstream's count settles (every request either
	// reached it or was refused); the assertion is on the count.
	deadline := time.Now().Add(10 * time.Second)
	last, stable := int64(-1), 0
	for time.Now().Before(deadline) && stable < 10 {
		time.Sleep(50 * time.Millisecond)
		if n := inFlight.Load(); n == last {
			stable++
		} else {
			last, stable = n, 0
		}
	}
	if got := peak.Load(); got > slots {
		t.Fatalf("one agent key held %d concurrent upstream prompts/get through one legacy SSE session (max_concurrent_calls %d)", got, slots)
	}
	if got := refused.Load(); got != sent-slots {
		t.Errorf("%d of %d refused, want %d", got, sent, sent-slots)
	}
	close(gate)
	wg.Wait()
	for i := range slots + 1 {
		if err := get(); err != nil {
			t.Fatalf("prompts/get %d after the others ended: %v (a place was not given back)", i+1, err)
		}
	}
}
