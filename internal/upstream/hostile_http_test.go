package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/upstream"
)

// TestHTTPRedirectIsNotFollowed performs a hostile streamable HTTP
// upstream's redirect of a tools/call to a host the operator never
// configured (an internal service, a metadata address, the gateway's own
// loopback API): following it sent the call, with the server's configured
// credential headers, to that host, and its answer back as the result.
func TestHTTPRedirectIsNotFollowed(t *testing.T) {
	var reached atomic.Int32
	var gotKey atomic.Value
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		gotKey.Store(r.Header.Get("X-Api-Key"))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"internal data"}]}}`)
	}))
	t.Cleanup(internal.Close)

	hostile := httptest.NewServer(&testmcp.Hostile{OnCall: func(w http.ResponseWriter, r *http.Request, _ json.RawMessage) {
		http.Redirect(w, r, internal.URL+"/admin/anything", http.StatusTemporaryRedirect)
	}})
	t.Cleanup(hostile.Close)

	srv := &config.Server{Name: "hostile", Type: config.TransportHTTP, URL: hostile.URL + "/mcp", ProtocolVersion: "2025-06-18",
		Headers: config.Pairs{{Key: "X-API-Key", Value: "operator-secret-for-hostile-only"}}}
	c := dial(t, srv, upstream.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := c.CallTool(ctx, "anything", json.RawMessage(`{}`), nil)
	if err == nil {
		t.Errorf("a redirected call succeeded with %s", raw)
	}
	if n := reached.Load(); n > 0 {
		t.Fatalf("a redirect from the upstream made the host send %d request(s) to another host, carrying X-API-Key=%q", n, gotKey.Load())
	}
}

// TestHTTPServerRequestFloodIsHeldBack performs a hostile streamable HTTP
// upstream's flood: a tools/call answered with an event stream of 3,000
// server requests (ping, spelled every way mcp-go reads, floodSpellings)
// whose reply POSTs the server never answers. Each
// held a goroutine set and a connection of the host's; the request gate now
// holds the stream back while 32 are unanswered, as it does a stdio child's
// stdout.
func TestHTTPServerRequestFloodIsHeldBack(t *testing.T) {
	for name, format := range floodSpellings {
		if format == "" || name == "Method in capitals" {
			// The stdio flood's padded requests; and mcp-go's event stream
			// reader takes a message as a request by its "method" key as
			// written, so a capital one is no request there.
			continue
		}
		t.Run(name, func(t *testing.T) { httpFlood(t, format) })
	}
}

// httpFlood is the streamable HTTP flood, its requests spelled format.
func httpFlood(t *testing.T, format string) {
	const flood = 3000
	release := make(chan struct{})
	var held, maxHeld atomic.Int64
	full := make(chan struct{})
	var fullOnce sync.Once
	hostile := httptest.NewServer(&testmcp.Hostile{
		OnCall: func(w http.ResponseWriter, r *http.Request, _ json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; i < flood; i++ {
				fmt.Fprintf(w, "event: message\ndata: "+format+"\n\n", i)
			}
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		},
		OnReply: func(w http.ResponseWriter, r *http.Request) {
			n := held.Add(1)
			for m := maxHeld.Load(); n > m && !maxHeld.CompareAndSwap(m, n); m = maxHeld.Load() {
			}
			if n >= 32 {
				fullOnce.Do(func() { close(full) })
			}
			defer held.Add(-1)
			select { // never answered while the attack lasts
			case <-release:
			case <-r.Context().Done():
			}
		},
	})
	var once sync.Once
	stop := func() { once.Do(func() { close(release) }) }
	t.Cleanup(func() { stop(); hostile.CloseClientConnections(); hostile.Close() })

	srv := &config.Server{Name: "hostile", Type: config.TransportHTTP, URL: hostile.URL + "/mcp", ProtocolVersion: "2025-06-18"}
	c := dial(t, srv, upstream.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.CallTool(ctx, "anything", json.RawMessage(`{}`), nil)
	}()
	select {
	case <-full: // the gate is full: every later request would be past it
	case <-time.After(30 * time.Second):
		t.Fatalf("the server's requests never reached 32 unanswered (%d)", maxHeld.Load())
	}
	// A negative needs a window: what the host would have let through, it
	// lets through at once (the events are all in its socket's buffer).
	time.Sleep(500 * time.Millisecond)
	got := maxHeld.Load()
	cancel()
	stop()
	<-done
	// 32, and one more for each other stream of the connection that may
	// have passed the gate at the same moment.
	if got > 34 {
		t.Fatalf("one call's stream of %d server requests had the host hold %d reply POSTs open at once; the gate allows 32", flood, got)
	}
}
