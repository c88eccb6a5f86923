package mcpserver_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// TestResourceSubscriptionsAreBoundedPerUser performs what one key could do
// to the host's memory: subscribe to any number of resources, by URIs up to
// the body limit, each kept for its session's life by the door and by
// mcp-go (64 sessions of a key held 64 MiB in one minute). A URI past 8 KiB
// is refused, and so is a user's subscription past 1,024 over all their
// sessions; another user's are their own, and an unsubscribe frees a place.
func TestResourceSubscriptionsAreBoundedPerUser(t *testing.T) {
	h := subscribable(t, &server.Hooks{})
	subscribe := func(c interface {
		Subscribe(context.Context, mcp.SubscribeRequest) error
	}, uri string) error {
		return c.Subscribe(h.ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uri}})
	}
	a1, a2, bob := h.client("2025-11-25", "ka"), h.client("2025-11-25", "ka"), h.client("2025-11-25", "kb")

	if err := subscribe(a1, "sub://item/"+strings.Repeat("a", 8<<10)); err == nil || !strings.Contains(err.Error(), "longer than 8192 bytes") {
		t.Fatalf("a subscribe to a 8 KiB URI: %v, want a refusal", err)
	}
	const limit = 1024
	for i := range limit {
		c := a1
		if i%2 == 1 {
			c = a2 // the bound is the user's, over sessions
		}
		if err := subscribe(c, fmt.Sprintf("sub://item/%d", i)); err != nil {
			t.Fatalf("alice's subscribe %d: %v", i+1, err)
		}
	}
	if err := subscribe(a2, "sub://item/one-more"); err == nil || !strings.Contains(err.Error(), "too many resource subscriptions") {
		t.Fatalf("alice's subscribe past %d: %v, want a refusal", limit, err)
	}
	if err := subscribe(bob, "sub://item/bob"); err != nil {
		t.Fatalf("bob's subscribe while alice is at her bound: %v", err)
	}
	if err := a1.Unsubscribe(h.ctx(), mcp.UnsubscribeRequest{Params: mcp.UnsubscribeParams{URI: "sub://item/0"}}); err != nil {
		t.Fatal(err)
	}
	if err := subscribe(a2, "sub://item/one-more"); err != nil {
		t.Fatalf("alice's subscribe after an unsubscribe: %v", err)
	}
}

// TestResourceSubscribesSentAtOnceAreBounded performs 1,500 subscribes of
// one user sent at once to an upstream that takes 300 ms for each: a
// subscription counts once recorded, after its round trip, so each of them
// passed a bound checked alone. A subscribe now takes its place when it is
// admitted, and exactly the bound's 1,024 are taken.
func TestResourceSubscribesSentAtOnceAreBounded(t *testing.T) {
	hooks := &server.Hooks{}
	hooks.AddBeforeSubscribe(func(context.Context, any, *mcp.SubscribeRequest) { time.Sleep(300 * time.Millisecond) })
	h := subscribable(t, hooks)
	const limit, burst = 1024, 1500
	clients := make([]interface {
		Subscribe(context.Context, mcp.SubscribeRequest) error
	}, 8)
	for i := range clients {
		clients[i] = h.client("2025-11-25", "ka")
	}
	var ok atomic.Int32
	var wg sync.WaitGroup
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if clients[i%len(clients)].Subscribe(h.ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: fmt.Sprintf("sub://item/%d", i)}}) == nil {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := ok.Load(); n != limit {
		t.Fatalf("%d of %d subscribes sent at once by one user were taken; the bound is %d", n, burst, limit)
	}
}

// subscribable is a gateway (keys "ka" and "kb") over one stateless HTTP
// server, "sub", that takes every subscribe to a sub://item/{id} resource
// and keeps nothing, so what is held is the door's; hooks are the server's.
func subscribable(t *testing.T, hooks *server.Hooks) *host {
	t.Helper()
	up := server.NewMCPServer("sub", "1", server.WithResourceCapabilities(true, false), server.WithToolCapabilities(false), server.WithHooks(hooks))
	up.AddTool(mcp.NewTool("noop"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	up.AddResourceTemplate(mcp.NewResourceTemplate("sub://item/{id}", "item"), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "x"}}, nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(up, server.WithStateLess(true)))
	t.Cleanup(ts.Close)
	return hostileGateway(t, map[string]any{"sub": map[string]any{"type": "http", "url": ts.URL + "/mcp", "protocol_version": "2025-11-25"}})
}
