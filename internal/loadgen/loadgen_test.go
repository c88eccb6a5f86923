package loadgen_test

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
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/loadgen"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// upstream is a real mcp-go streamable HTTP server in this process with
// three tools: echo, fail (a tool error) and notify (sends a log
// notification first, so the response is an event stream). It counts the
// sessions that called a tool and the SSE responses it sent.
type upstream struct {
	url      string
	mu       sync.Mutex
	sessions map[string]bool
	sse      atomic.Int64
}

func newUpstream(t *testing.T, token string, opts ...server.StreamableHTTPOption) *upstream {
	t.Helper()
	u := &upstream{sessions: map[string]bool{}}
	s := server.NewMCPServer("loadgen-test", "0", server.WithLogging())
	record := func(ctx context.Context) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			u.mu.Lock()
			u.sessions[cs.SessionID()] = true
			u.mu.Unlock()
		}
	}
	s.AddTool(mcp.NewTool("echo", mcp.WithString("message")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		record(ctx)
		return mcp.NewToolResultText("Echo: " + req.GetString("message", "")), nil
	})
	s.AddTool(mcp.NewTool("fail"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		record(ctx)
		return mcp.NewToolResultError("always fails"), nil
	})
	s.AddTool(mcp.NewTool("notify"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		record(ctx)
		if err := server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "working"}); err != nil {
			return nil, err
		}
		return mcp.NewToolResultText("done"), nil
	})
	h := server.NewStreamableHTTPServer(s, opts...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
		if w.Header().Get("Content-Type") == "text/event-stream" {
			u.sse.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL + "/mcp"
	return u
}

func (u *upstream) sessionCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.sessions)
}

func TestRunMCP(t *testing.T) {
	tests := []struct {
		name       string
		opts       []server.StreamableHTTPOption
		token      string
		auth       string
		tool       string
		workers    int
		count      int
		wantErrors int
		// wantSessions is the number of distinct sessions that called a
		// tool (-1: not checked, for a stateless server).
		wantSessions int
		wantSSE      bool
		// wantFirst is text the first failure's message must hold.
		wantFirst string
	}{
		{name: "session per worker", opts: []server.StreamableHTTPOption{server.WithStateful(true)}, tool: "echo", workers: 4, count: 40, wantSessions: 4},
		{name: "bearer token", opts: []server.StreamableHTTPOption{server.WithStateful(true)}, token: "k1", auth: "Bearer k1", tool: "echo", workers: 2, count: 10, wantSessions: 2},
		{name: "stateless server", opts: []server.StreamableHTTPOption{server.WithStateLess(true)}, tool: "echo", workers: 3, count: 12, wantSessions: -1},
		{name: "tool errors are counted", opts: []server.StreamableHTTPOption{server.WithStateful(true)}, tool: "fail", workers: 2, count: 10, wantErrors: 10, wantSessions: 2, wantFirst: "always fails"},
		{name: "unknown tool is counted", opts: []server.StreamableHTTPOption{server.WithStateful(true)}, tool: "missing", workers: 1, count: 5, wantErrors: 5, wantSessions: 0},
		{name: "event-stream responses", opts: []server.StreamableHTTPOption{server.WithStateful(true)}, tool: "notify", workers: 2, count: 8, wantSessions: 2, wantSSE: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstream(t, tt.token, tt.opts...)
			res, err := loadgen.Run(t.Context(), loadgen.Options{
				Mode: loadgen.MCP, URL: u.url, Tool: tt.tool, Arguments: json.RawMessage(`{"message":"hi"}`),
				Workers: tt.workers, Count: tt.count, Authorization: tt.auth,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Calls != tt.count || res.Errors != tt.wantErrors {
				t.Errorf("calls, errors = %d, %d; want %d, %d (first error: %v)", res.Calls, res.Errors, tt.count, tt.wantErrors, res.FirstError)
			}
			if (res.FirstError != nil) != (tt.wantErrors > 0) {
				t.Errorf("FirstError = %v with %d errors", res.FirstError, res.Errors)
			}
			if tt.wantFirst != "" && (!errors.Is(res.FirstError, loadgen.ErrToolResult) || !strings.Contains(res.FirstError.Error(), tt.wantFirst)) {
				t.Errorf("FirstError = %v, want ErrToolResult with %q", res.FirstError, tt.wantFirst)
			}
			if tt.wantSessions >= 0 && u.sessionCount() != tt.wantSessions {
				t.Errorf("%d sessions called tools, want %d", u.sessionCount(), tt.wantSessions)
			}
			if got := u.sse.Load() > 0; got != tt.wantSSE {
				t.Errorf("server sent event-stream responses: %v, want %v", got, tt.wantSSE)
			}
		})
	}
}

func TestRunByDuration(t *testing.T) {
	u := newUpstream(t, "", server.WithStateful(true))
	res, err := loadgen.Run(t.Context(), loadgen.Options{Mode: loadgen.MCP, URL: u.url, Tool: "echo", Workers: 2, Duration: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Calls == 0 || res.Errors != 0 {
		t.Errorf("calls, errors = %d, %d (first error: %v)", res.Calls, res.Errors, res.FirstError)
	}
	if res.P50 > res.P90 || res.P90 > res.P99 || res.P99 > res.Max {
		t.Errorf("percentiles out of order: %v %v %v %v", res.P50, res.P90, res.P99, res.Max)
	}
}

func TestRunSetupFailure(t *testing.T) {
	u := newUpstream(t, "k1", server.WithStateful(true))
	_, err := loadgen.Run(t.Context(), loadgen.Options{Mode: loadgen.MCP, URL: u.url, Tool: "echo", Workers: 2, Count: 4, Authorization: "Bearer wrong"})
	if !errors.Is(err, loadgen.ErrSetup) {
		t.Fatalf("err = %v, want ErrSetup", err)
	}
}

func TestRunRefusesOptions(t *testing.T) {
	for _, o := range []loadgen.Options{
		{Mode: "grpc", URL: "http://x", Tool: "echo", Workers: 1, Count: 1},
		{Mode: loadgen.MCP, Tool: "echo", Workers: 1, Count: 1},
		{Mode: loadgen.Direct, Tool: "echo", Workers: 1, Count: 1},
		{Mode: loadgen.MCP, URL: "http://x", Workers: 1, Count: 1},
		{Mode: loadgen.MCP, URL: "http://x", Tool: "echo", Count: 1},
		{Mode: loadgen.MCP, URL: "http://x", Tool: "echo", Workers: 1},
		{Mode: loadgen.MCP, URL: "http://x", Tool: "echo", Workers: 1, Count: 1, Arguments: json.RawMessage(`{`)},
	} {
		if _, err := loadgen.Run(t.Context(), o); !errors.Is(err, loadgen.ErrOptions) {
			t.Errorf("%+v: err = %v, want ErrOptions", o, err)
		}
	}
}

func TestRunDirect(t *testing.T) {
	bin := testmcp.Build(t)
	tests := []struct {
		name       string
		tool       string
		wantErrors int
	}{
		{name: "echo", tool: "echo"},
		{name: "tool error is counted", tool: "fail", wantErrors: 6},
		{name: "unknown tool is counted", tool: "missing", wantErrors: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := loadgen.Run(t.Context(), loadgen.Options{
				Mode: loadgen.Direct, Command: bin, Tool: tt.tool, Arguments: json.RawMessage(`{"message":"hi"}`),
				Workers: 2, Count: 6,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Calls != 6 || res.Errors != tt.wantErrors {
				t.Errorf("calls, errors = %d, %d; want 6, %d (first error: %v)", res.Calls, res.Errors, tt.wantErrors, res.FirstError)
			}
		})
	}
}

func TestRunREST(t *testing.T) {
	bin := testmcp.Build(t)
	cfg := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"mcpServers": {"demo": {"command": %q}}}`, bin), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: cfg, DataDir: t.TempDir()})
	t.Cleanup(func() { cache.Close() })
	auth := principal.New([]settings.Key{{Key: "k1", User: "alice", Role: settings.RoleAgent}})
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: auth}).Handler())
	t.Cleanup(srv.Close)

	tests := []struct {
		name       string
		tool       string
		auth       string
		wantErrors int
	}{
		{name: "echo", tool: "demo_echo", auth: "Bearer k1"},
		{name: "tool error is counted", tool: "demo_fail", auth: "Bearer k1", wantErrors: 4},
		{name: "unknown tool is counted", tool: "demo_missing", auth: "Bearer k1", wantErrors: 4},
		{name: "missing key is counted", tool: "demo_echo", wantErrors: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := loadgen.Run(t.Context(), loadgen.Options{
				Mode: loadgen.REST, URL: srv.URL, Tool: tt.tool, Arguments: json.RawMessage(`{"message":"hi"}`),
				Workers: 2, Count: 4, Authorization: tt.auth,
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Calls != 4 || res.Errors != tt.wantErrors {
				t.Errorf("calls, errors = %d, %d; want 4, %d (first error: %v)", res.Calls, res.Errors, tt.wantErrors, res.FirstError)
			}
		})
	}
}

// TestRunHeader: extra headers reach the door on every request. Through
// Antler's /mcp door, X-Antler-Thread-Id puts every worker's session on the
// one named thread (one workspace, one stdio process) instead of a thread
// per session; the REST door takes its thread from the body, not a header.
func TestRunHeader(t *testing.T) {
	bin := testmcp.Build(t)
	cfg := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"mcpServers": {"demo": {"command": %q}}}`, bin), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	cache := toolcache.New(toolcache.Options{ConfigPath: cfg, DataDir: data})
	t.Cleanup(func() { cache.Close() })
	auth := principal.New([]settings.Key{{Key: "k1", User: "alice", Role: settings.RoleAgent}})
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: auth}).Handler())
	t.Cleanup(srv.Close)

	for _, mode := range []loadgen.Mode{loadgen.MCP, loadgen.REST} {
		u := srv.URL
		if mode == loadgen.MCP {
			u += "/mcp"
		}
		res, err := loadgen.Run(t.Context(), loadgen.Options{
			Mode: mode, URL: u, Tool: "demo_echo", Arguments: json.RawMessage(`{"message":"hi"}`),
			Workers: 3, Count: 9, Authorization: "Bearer k1",
			Header: http.Header{"X-Antler-Thread-Id": {"shared-" + string(mode)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Calls != 9 || res.Errors != 0 {
			t.Fatalf("%s: calls, errors = %d, %d; first error: %v", mode, res.Calls, res.Errors, res.FirstError)
		}
	}
	entries, err := os.ReadDir(filepath.Join(data, "users", "alice", "threads"))
	if err != nil {
		t.Fatal(err)
	}
	var threads []string
	for _, e := range entries {
		threads = append(threads, e.Name())
	}
	if want := []string{"default", "shared-mcp"}; !slices.Equal(threads, want) {
		t.Errorf("threads with workspaces: %q, want %q", threads, want)
	}
}
