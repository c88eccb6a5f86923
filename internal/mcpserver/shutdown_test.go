package mcpserver_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/toolcache"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestShutdownEndsOpenMCPStreams: a listening client's GET /mcp stream
// does not hold the gateway's drain until the grace period runs out.
func TestShutdownEndsOpenMCPStreams(t *testing.T) {
	h := newHost(t) // for the config and upstreams
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cache := toolcache.New(toolcache.Options{ConfigPath: h.cfgPath, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	gw := testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil), Logger: log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- gw.Serve(ctx, ln, 30*time.Second) }()

	served2 := &host{t: t, url: "http://" + ln.Addr().String()}
	c := served2.client("2025-11-25", "", transport.WithContinuousListening())
	if names := mcpNames(t, c); len(names) == 0 {
		t.Fatal("no tools")
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if strings.Contains(logs.String(), "did not finish in time") {
		t.Errorf("the drain waited for the MCP stream:\n%s", logs.String())
	}
}
