package mcpserver_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// BenchmarkMCPCall is BenchmarkStdioCall's gateway case on the other door:
// one mcp-go client session on /mcp of a real gateway on loopback, calling
// the demo server's echo over stdio with tools/call. The session (and its
// stdio process) is set up before the clock starts.
func BenchmarkMCPCall(b *testing.B) { benchMCPCall(b, mcp.LATEST_PROTOCOL_VERSION, "") }

// BenchmarkMCPCallSession is BenchmarkMCPCall as the load benchmark's /mcp
// rows run it: a 2025-11-25 client (a session with Mcp-Session-Id) and the
// demo pinned to 2025-11-25, the revision TBXark/mcp-proxy speaks to it.
func BenchmarkMCPCallSession(b *testing.B) {
	benchMCPCall(b, mcp.ProtocolVersion20251125, mcp.ProtocolVersion20251125)
}

// benchMCPCall measures one client speaking version calling the demo,
// whose entry pins pin (empty: none).
func benchMCPCall(b *testing.B, version, pin string) {
	bin := testmcp.Build(b)
	cfg := filepath.Join(b.TempDir(), "extensions_config.json")
	entry := fmt.Sprintf(`{"command": %q}`, bin)
	if pin != "" {
		entry = fmt.Sprintf(`{"command": %q, "protocol_version": %q}`, bin, pin)
	}
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `{"mcpServers": {"demo": %s}}`, entry), 0o600); err != nil {
		b.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: cfg, DataDir: b.TempDir()})
	defer cache.Close()
	gw := testgateway.New(b, gateway.Options{Cache: cache, Auth: principal.New(nil)})
	srv := httptest.NewServer(gw.Handler())
	defer func() { gw.Close(); srv.Close() }()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	tr, err := transport.NewStreamableHTTP(srv.URL + "/mcp")
	if err != nil {
		b.Fatal(err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	init.Params.ClientInfo = mcp.Implementation{Name: "bench", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		b.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "demo_echo", map[string]any{"message": "benchmark"}
	call := func() {
		res, err := c.CallTool(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if res.IsError || len(res.Content) == 0 || !strings.Contains(textOf(res), "Echo: benchmark") {
			b.Fatalf("result %+v", res)
		}
	}
	testmcp.Measure(b, call) // the warm-up call starts the session's stdio process
}
