package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/config"
	"github.com/antler-mcp/antler/host/gateway"
	"github.com/antler-mcp/antler/host/principal"
	"github.com/antler-mcp/antler/host/toolcache"
	"github.com/antler-mcp/antler/host/upstream"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// latencies records per-call durations to report percentiles beside ns/op.
type latencies []time.Duration

// measure runs call b.N times (after one warm-up call) and reports ns/op,
// allocations and latency percentiles.
func measure(b *testing.B, call func()) {
	call()
	var lat latencies
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		call()
		lat = append(lat, time.Since(start))
	}
	lat.report(b)
}

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Microseconds()), "p99-µs")
}

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
		measure(b, func() {
			if _, err := conn.CallTool(context.Background(), "echo", args, nil); err != nil {
				b.Fatal(err)
			}
		})
	})

	// The gateway's handler called in-process: everything but the HTTP hop.
	b.Run("handler", func(b *testing.B) {
		cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(b, fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}}}`, bin)), DataDir: b.TempDir()})
		defer cache.Close()
		h := gateway.New(gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler()
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
		measure(b, call)
	})

	b.Run("gateway", func(b *testing.B) {
		cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(b, fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}}}`, bin)), DataDir: b.TempDir()})
		defer cache.Close()
		srv := httptest.NewServer(gateway.New(gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler())
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
		measure(b, call) // the warm-up call does the discovery, outside the timing
	})
}
