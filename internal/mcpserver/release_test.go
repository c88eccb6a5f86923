package mcpserver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/eventually"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// watchUpstreamArg makes the test binary a stdio MCP server with one
// subscribable resource (see TestMain and serveWatchUpstream).
const watchUpstreamArg = "antler-watch-upstream"

// serveWatchUpstream serves, on stdio, the resources relay://watched and
// relay://gated (and a tool, noop, as a server needs one to be
// discovered), appending to record a "serving" line when it starts and a
// "subscribed <uri>" or "unsubscribed <uri>" line for each change of its
// subscriptions. A subscribe to relay://gated records "subscribing
// relay://gated" and waits for the file record+".open".
func serveWatchUpstream(record string) {
	note := recorder(record)
	hooks := &server.Hooks{}
	hooks.AddBeforeSubscribe(func(_ context.Context, _ any, r *mcp.SubscribeRequest) {
		if r.Params.URI != "relay://gated" {
			return
		}
		note("subscribing " + r.Params.URI)
		for {
			if _, err := os.Stat(record + ".open"); err == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	hooks.AddAfterSubscribe(func(_ context.Context, _ any, r *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		note("subscribed " + r.Params.URI)
	})
	hooks.AddAfterUnsubscribe(func(_ context.Context, _ any, r *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		note("unsubscribed " + r.Params.URI)
	})
	srv := server.NewMCPServer("watchup", "1", server.WithResourceCapabilities(true, false), server.WithHooks(hooks))
	srv.AddResource(mcp.NewResource("relay://watched", "watched"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "relay://watched", Text: "watched"}}, nil
	})
	srv.AddResource(mcp.NewResource("relay://gated", "gated"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "relay://gated", Text: "gated"}}, nil
	})
	srv.AddTool(mcp.NewTool("noop"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("noop"), nil
	})
	note("serving")
	_ = server.NewStdioServer(srv).Listen(context.Background(), os.Stdin, os.Stdout)
}

// TestEndedSessionReleasesItsStdioSubscription: the subscription an MCP
// session held on a stdio process ends upstream when the session ends.
// A process that still runs (a named thread's, which outlives the session)
// is told; one that ended with the session's own thread is not started
// again to be told.
func TestEndedSessionReleasesItsStdioSubscription(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(t.TempDir(), "record")
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"w": map[string]any{"command": exe, "args": []string{watchUpstreamArg, record}, "protocol_version": "2025-11-25"},
	}})
	cfg := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(cfg, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: cfg, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	logs := &lockedBuffer{}
	gw := testgateway.New(t, gateway.Options{Cache: cache,
		Auth:   principal.New([]settings.Key{{Key: "ka", User: "alice", Role: settings.RoleAgent}}),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { gw.Close(); srv.Close() })
	h := &relayHost{host: &host{t: t, url: srv.URL}, record: record, log: logs}
	lines := func(want string) int {
		b, _ := os.ReadFile(record)
		n := 0
		for l := range strings.SplitSeq(string(b), "\n") {
			if l == want {
				n++
			}
		}
		return n
	}
	session := func(headers map[string]string) *client.Client {
		headers["Authorization"] = "Bearer ka"
		return h.client("2025-11-25", "", transport.WithHTTPHeaders(headers))
	}
	// uriOf is the URI the door lists the resource name under.
	uriOf := func(c *client.Client, name string) string {
		list, err := c.ListResources(h.ctx(), mcp.ListResourcesRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.Resources {
			if r.Name == name {
				return r.URI
			}
		}
		t.Fatalf("%s is not listed: %+v", name, list.Resources)
		return ""
	}
	subscribe := func(headers map[string]string) *client.Client {
		c := session(headers)
		if err := c.Subscribe(h.ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: uriOf(c, "watched")}}); err != nil {
			t.Fatal(err)
		}
		return c
	}
	released := func() int { return strings.Count(logs.String(), "MCP subscription of an ended session") }

	// A named thread's process outlives the session: it is told.
	named := subscribe(map[string]string{mcpserver.HeaderThreadID: "shared"})
	h.recorded(t, "subscribed relay://watched")
	started := lines("serving") // discovery's process and the thread's
	endSession(t, h.url, "ka", named)
	h.recorded(t, "unsubscribed relay://watched")
	if n := lines("serving"); n != started {
		t.Fatalf("%d processes started to release the subscription", n-started)
	}

	// The session's own thread is retired with it: its process is gone,
	// and no new one starts to hear the unsubscribe.
	own := subscribe(map[string]string{})
	eventually.True(t, "the session's own process to subscribe", func() bool { return lines("subscribed relay://watched") == 2 })
	started = lines("serving")
	endSession(t, h.url, "ka", own)
	eventually.True(t, "the release of the session's subscription", func() bool { return released() == 2 })
	if !strings.Contains(logs.String(), "MCP subscription of an ended session left: its connection is gone") {
		t.Error("the release did not find the retired thread's process gone")
	}
	if n := lines("serving"); n != started {
		t.Errorf("the release started %d processes for a retired thread", n-started)
	}
	if n := lines("unsubscribed relay://watched"); n != 1 {
		t.Errorf("%d unsubscribes recorded, want the named thread's only", n)
	}

	// A subscribe still at the server when its session ends is taken back
	// only where it went: that process is retired with the session's
	// thread, and no new one starts to hear the unsubscribe.
	late := session(map[string]string{})
	gated := uriOf(late, "gated")
	go func() { _ = late.Subscribe(h.ctx(), mcp.SubscribeRequest{Params: mcp.SubscribeParams{URI: gated}}) }()
	h.recorded(t, "subscribing relay://gated")
	started = lines("serving")
	endSession(t, h.url, "ka", late)
	if err := os.WriteFile(record+".open", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.recorded(t, "subscribed relay://gated")
	eventually.True(t, "the late subscribe to be taken back", func() bool { return released() == 3 })
	if n := lines("serving"); n != started {
		t.Errorf("taking back the late subscribe started %d processes for a retired thread", n-started)
	}
}

// endSession ends c's MCP session with DELETE /mcp as the owner of key
// ("": a host without keys; mcp-go's client sends its DELETE without the
// key's header).
func endSession(t *testing.T, url, key string, c *client.Client) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, url+"/mcp", nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Mcp-Session-Id", c.GetSessionId())
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE /mcp: %d", resp.StatusCode)
	}
}
