package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
	"github.com/antler-mcp/antler/internal/tracing"
)

// TestTaskSubmitsAreTracedAtTheDoor: a durable task's submit through /mcp,
// as DeerFlow's local task and as a 2026-07-28 spec task, has the endpoint's
// server span, and the submit's upstream call runs in its trace.
func TestTaskSubmitsAreTracedAtTheDoor(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	doc := fmt.Sprintf(`{"mcpServers": {"reports": {"type": "http", "url": %q, %s}}}`,
		testmcp.StartReportsHTTP(t)+"/mcp", testtask.ReportsToolset)
	rt := testtask.NewTraced(t, doc, testtask.FastConfig(), tr)
	rt.Service.Start()
	gw := testgateway.New(t, gateway.Options{Cache: rt.Cache, Auth: principal.New(nil), Tasks: rt.Service})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { gw.Close(); srv.Close() })
	h := &host{t: t, url: srv.URL}
	for _, withTasks := range []bool{false, true} {
		t.Run(fmt.Sprint("tasks extension ", withTasks), func(t *testing.T) {
			exp.Reset()
			code, reply := h.modern("", "tools/call", submitTool, map[string]any{"name": submitTool,
				"arguments": map[string]any{"topic": "traced", "delay_ms": 0}}, withTasks)
			if code != http.StatusOK || reply.Error != nil {
				t.Fatalf("submit: %d %+v", code, reply.Error)
			}
			var door, chain bool
			spans := exp.GetSpans()
			var doorTrace string
			for _, s := range spans {
				if s.Name == mcpserver.SpanMCPCall {
					door, doorTrace = true, s.SpanContext.TraceID().String()
				}
			}
			for _, s := range spans {
				if s.Name == dispatch.SpanChain && s.SpanContext.TraceID().String() == doorTrace {
					chain = true
				}
			}
			if !door || !chain {
				t.Fatalf("door span %v, the submit's upstream call in its trace %v (spans %d)", door, chain, len(spans))
			}
		})
	}
}
