package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// replayed is the ids replayed after last on sessionID, or the error.
func replayed(s *eventStore, sessionID, last string) ([]string, error) {
	var ids []string
	_, err := s.ReplayEventsAfter(context.Background(), sessionID, last, func(id string, _ json.RawMessage) error {
		ids = append(ids, id)
		return nil
	})
	return ids, err
}

// TestEventStoreBounds: the store holds a session's events within its
// count and bytes, all sessions' within the total (the oldest dropped
// first, whichever session's), and never a message over the event size;
// a resuming client gets the later events held and skips the rest.
func TestEventStoreBounds(t *testing.T) {
	msg := func(n int) json.RawMessage { return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`) }
	type event struct {
		session string
		size    int
	}
	tests := []struct {
		name   string
		limits storeLimits
		events []event // ids 1, 2, ...
		// held is the ids held per session, with their bytes.
		held  map[string][]string
		bytes map[string]int64
		// resume from (session, id) replays these ids, nil: unknown id.
		resume map[[2]string][]string
	}{
		{name: "session bytes", limits: storeLimits{events: 100, sessionBytes: 350, totalBytes: 1 << 20, eventBytes: 200},
			events: []event{{"a", 100}, {"a", 100}, {"a", 100}, {"a", 100}, {"a", 100}},
			held:   map[string][]string{"a": {"3", "4", "5"}}, bytes: map[string]int64{"a": 300},
			resume: map[[2]string][]string{{"a", "3"}: {"4", "5"}, {"a", "2"}: nil}},
		{name: "session count", limits: storeLimits{events: 2, sessionBytes: 1 << 20, totalBytes: 1 << 20, eventBytes: 200},
			events: []event{{"a", 10}, {"a", 10}, {"a", 10}},
			held:   map[string][]string{"a": {"2", "3"}}, bytes: map[string]int64{"a": 20}},
		{name: "too large to keep", limits: storeLimits{events: 100, sessionBytes: 1 << 20, totalBytes: 1 << 20, eventBytes: 50},
			events: []event{{"a", 10}, {"a", 100}, {"a", 10}},
			held:   map[string][]string{"a": {"1", "2", "3"}}, bytes: map[string]int64{"a": 20},
			resume: map[[2]string][]string{{"a", "1"}: {"3"}, {"a", "2"}: {"3"}}},
		{name: "total bytes, oldest first", limits: storeLimits{events: 100, sessionBytes: 1 << 20, totalBytes: 250, eventBytes: 200},
			events: []event{{"a", 100}, {"b", 100}, {"a", 100}, {"b", 100}},
			held:   map[string][]string{"a": {"3"}, "b": {"4"}}, bytes: map[string]int64{"a": 100, "b": 100},
			resume: map[[2]string][]string{{"a", "1"}: nil, {"b", "2"}: nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newEventStore(tc.limits, nil)
			for _, e := range tc.events {
				if _, err := s.StoreEvent(context.Background(), e.session, "stream-"+e.session, msg(e.size)); err != nil {
					t.Fatal(err)
				}
			}
			var total int64
			for session, want := range tc.held {
				var got []string
				for _, e := range s.sessions[session].events {
					got = append(got, fmt.Sprint(e.id))
				}
				n, bytes, _ := s.held(session)
				if !slices.Equal(got, want) || n != len(want) || bytes != tc.bytes[session] {
					t.Errorf("session %s holds %v (%d events, %d bytes), want %v (%d bytes)", session, got, n, bytes, want, tc.bytes[session])
				}
				total += bytes
			}
			if _, _, all := s.held(""); all != total || all > tc.limits.totalBytes {
				t.Errorf("total %d bytes, want %d within %d", all, total, tc.limits.totalBytes)
			}
			for from, want := range tc.resume {
				got, err := replayed(s, from[0], from[1])
				switch {
				case want == nil && !errors.Is(err, server.ErrUnknownEventID):
					t.Errorf("resume %v: %v %v, want ErrUnknownEventID", from, got, err)
				case want != nil && (err != nil || !slices.Equal(got, want)):
					t.Errorf("resume %v: %v %v, want %v", from, got, err, want)
				}
			}
			for session := range tc.held {
				_ = s.PurgeSession(context.Background(), session)
			}
			if _, _, all := s.held(""); all != 0 {
				t.Errorf("after every session ended, %d bytes held", all)
			}
		})
	}
}

// TestBigResultsStayWithinTheEventBudget performs the attack, scaled down
// (the door's store limits divided by 64, so the race detector's build
// stays quick): one session calls an upstream tool whose results are
// about the event size, again and again. Each result reaches the client,
// and the door holds the session's events within its byte budget (a
// result over the event size is not kept).
func TestBigResultsStayWithinTheEventBudget(t *testing.T) {
	door := doorOver(t, bigResults(), Options{})
	limits := storeLimits{events: DefaultMaxEventsPerSession, sessionBytes: maxSessionEventBytes / 64, totalBytes: maxEventStoreBytes / 64, eventBytes: maxStoredEventBytes / 64}
	door.events.limits = limits // before any traffic
	// The gateway's part, reduced: every request is alice's.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal.Principal{User: "alice", Role: settings.RoleAgent}
		door.Streamable().ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	tr, err := transport.NewStreamableHTTP(srv.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "big", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	var peak int64
	for _, tc := range []struct {
		name  string
		size  int
		calls int
	}{
		{"over the event size", int(limits.eventBytes) + 1, 3},
		{"within it", int(limits.eventBytes) - 1024, 12},
	} {
		name, size := tc.name, tc.size
		for i := range tc.calls {
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = "up_big", map[string]any{"size": size}
			req.Params.Meta = &mcp.Meta{ProgressToken: mcp.ProgressToken(fmt.Sprintf("%s-%d", name, i))}
			res, err := c.CallTool(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if text := res.Content[0].(mcp.TextContent).Text; len(text) != size {
				t.Fatalf("%s, call %d: a %d-byte result, want %d", name, i, len(text), size)
			}
			events, bytes, total := door.events.held(c.GetSessionId())
			// A result within the event size is itself an event; one over it
			// leaves only its progress, which may lose the race with the
			// result (it is then not an event of this stream).
			if events == 0 && name == "within it" {
				t.Fatalf("%s: no events held: the calls were not answered on event streams", name)
			}
			if bytes > limits.sessionBytes || total > limits.totalBytes {
				t.Fatalf("%s, call %d: %d bytes held for the session, %d in all; want at most %d and %d", name, i, bytes, total, limits.sessionBytes, limits.totalBytes)
			}
			if name == "over the event size" && bytes > int64(size) {
				t.Fatalf("%s, call %d: %d bytes held, the results were kept", name, i, bytes)
			}
			peak = max(peak, bytes)
		}
	}
	if peak < limits.sessionBytes/2 {
		t.Errorf("at most %d bytes held: results within the event size were not kept", peak)
	}
}

// bigResults is an upstream whose tool big answers size bytes of text, on
// an event stream when the call carries a progress token.
func bigResults() *server.MCPServer {
	up := server.NewMCPServer("big", "1")
	up.AddTool(mcp.NewTool("big", mcp.WithNumber("size", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// Progress makes the door answer on an event stream.
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1})
		}
		return mcp.NewToolResultText(strings.Repeat("A", req.GetInt("size", 0))), nil
	})
	return up
}

// doorOver is the door of opts (its Cache set here) over one streamable
// HTTP server, "up", serving up.
func doorOver(t *testing.T, up *server.MCPServer, opts Options) *Server {
	t.Helper()
	upSrv := httptest.NewServer(server.NewStreamableHTTPServer(up))
	t.Cleanup(upSrv.Close)
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"up": map[string]any{"type": "http", "url": upSrv.URL + "/mcp", "protocol_version": "2025-11-25"}}})
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	opts.Cache = cache
	door := New(opts)
	t.Cleanup(door.Close)
	return door
}
