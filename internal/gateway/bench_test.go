package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/internal/upstream"
)

// BenchmarkStdioCall compares one echo call to the demo server over stdio
// made directly with the mcp-go client (the same code the gateway uses) and
// made through the gateway's HTTP API on loopback. Budget: gateway p50
// within 1.3× of direct.
func BenchmarkStdioCall(b *testing.B) {
	bin := testmcp.Build(b)
	args := json.RawMessage(`{"message":"benchmark"}`)

	b.Run("direct", func(b *testing.B) {
		ext, err := config.Parse([]byte(fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}}}`, bin)), nil)
		if err != nil {
			b.Fatal(err)
		}
		conn, err := upstream.Dial(context.Background(), ext.Servers[0], upstream.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		testmcp.Measure(b, func() {
			if _, err := conn.CallTool(context.Background(), "echo", args, nil); err != nil {
				b.Fatal(err)
			}
		})
	})

	// The gateway's handler called in-process: everything but the HTTP hop.
	b.Run("handler", func(b *testing.B) {
		cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(b, fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}}}`, bin)), DataDir: b.TempDir()})
		defer cache.Close()
		h := testgateway.New(b, gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler()
		call := func() {
			req := httptest.NewRequest("POST", "http://127.0.0.1:8080/api/mcp/tools/demo_echo/call", strings.NewReader(`{"arguments":{"message":"benchmark"}}`))
			req.RemoteAddr = "127.0.0.1:1"
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 || !strings.Contains(rec.Body.String(), "Echo: benchmark") {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
		}
		testmcp.Measure(b, call)
	})

	b.Run("gateway", func(b *testing.B) {
		cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(b, fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}}}`, bin)), DataDir: b.TempDir()})
		defer cache.Close()
		srv := httptest.NewServer(testgateway.New(b, gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler())
		defer srv.Close()
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		url := srv.URL + "/api/mcp/tools/demo_echo/call"
		body := `{"arguments":{"message":"benchmark"}}`
		call := func() {
			resp, err := client.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(data), "Echo: benchmark") {
				b.Fatalf("%d %s", resp.StatusCode, data)
			}
		}
		testmcp.Measure(b, call) // the warm-up call does the discovery, outside the timing
	})
}
