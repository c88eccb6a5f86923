package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/sessionpool"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/upstream"
)

// TestLiveOnlyStartsNothing: a LiveOnly request fails with ErrNotLive
// when the server has no open connection, without dialling an HTTP server
// or starting a stdio process, and goes on the connection once one is
// open.
func TestLiveOnlyStartsNothing(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	httpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "not here", http.StatusNotFound)
	}))
	t.Cleanup(httpSrv.Close)
	bin := testmcp.Build(t)
	ext, err := config.Parse(fmt.Appendf(nil, `{"mcpServers": {"web": {"type": "http", "url": %q}, "demo": {"command": %q}}}`, httpSrv.URL, bin), nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := sessionpool.New[*upstream.Conn](sessionpool.Options{})
	t.Cleanup(pool.Close)
	ctx := context.Background()
	list := dispatch.Request{UserID: "alice", ThreadID: "t1", Method: "tools/list", LiveOnly: true}
	for _, srv := range ext.Servers {
		t.Run(srv.Name, func(t *testing.T) {
			opts := dispatch.Options{}
			if srv.IsStdio() {
				opts = dispatch.Options{Pool: pool, DataDir: t.TempDir()}
			}
			ep := dispatch.NewEndpoint(srv, opts)
			t.Cleanup(ep.Close)
			_, err := ep.Send(ctx, nil, list, nil)
			if !errors.Is(err, dispatch.ErrNotLive) {
				t.Fatalf("LiveOnly without a connection: %v, want ErrNotLive", err)
			}
			var ce *dispatch.CallError
			if !errors.As(err, &ce) || ce.Message == "" {
				t.Errorf("LiveOnly failure is not a model-safe CallError: %v", err)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("the HTTP server was dialled %d times", n)
			}
			if n := pool.Counts()[srv.Name]; n != 0 {
				t.Errorf("%d stdio processes started", n)
			}
			if !srv.IsStdio() {
				return
			}
			started := list
			started.LiveOnly = false
			if _, err := ep.Send(ctx, nil, started, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := ep.Send(ctx, nil, list, nil); err != nil {
				t.Errorf("LiveOnly on the thread's live process: %v", err)
			}
			if n := pool.Counts()[srv.Name]; n != 1 {
				t.Errorf("%d stdio processes, want the one started", n)
			}
		})
	}
}

// TestLiveOnlyResumesNoSession: a LiveOnly request naming a durable
// task's HTTP session other than the shared connection's fails with
// ErrNotLive instead of opening that session.
func TestLiveOnlyResumesNoSession(t *testing.T) {
	t.Parallel()
	ext, err := config.Parse(fmt.Appendf(nil, `{"mcpServers": {"web": {"type": "http", "url": %q}}}`, testmcp.StartHTTP(t, "http")+"/mcp"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ep := dispatch.NewEndpoint(ext.Servers[0], dispatch.Options{})
	t.Cleanup(ep.Close)
	ctx := context.Background()
	list := dispatch.Request{Method: "tools/list"}
	if _, err := ep.Send(ctx, nil, list, nil); err != nil {
		t.Fatal(err) // the shared connection is open now
	}
	list.LiveOnly = true
	if _, err := ep.Send(ctx, nil, list, nil); err != nil {
		t.Fatalf("LiveOnly on the open shared connection: %v", err)
	}
	list.Session = "a-task-session-the-shared-connection-is-not-on"
	if _, err := ep.Send(ctx, nil, list, nil); !errors.Is(err, dispatch.ErrNotLive) {
		t.Errorf("LiveOnly naming another session: %v, want ErrNotLive", err)
	}
}
