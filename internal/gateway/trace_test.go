package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/internal/tracing"
)

// TestTraceSpanTrees: a REST call and an MCP call, each to a stdio and an
// HTTP upstream with a credential layer, record the door's server span, the
// chain, the credential layer and the upstream request as one tree; the
// upstream receives the upstream span's context in _meta (and, over HTTP, as
// the traceparent header); no span holds the credential's value.
func TestTraceSpanTrees(t *testing.T) {
	const secret = "sk-trace-canary-7731"
	a, exp := newTracedAPI(t, fmt.Sprintf(`{"mcpServers": {
		"stdio": {"command": %q},
		"http": {"type": "http", "url": %q, "user_auth": {"users": {"default": "Bearer %s"}}}
	}}`, testmcp.Build(t), testmcp.StartHTTP(t, "http")+"/mcp", secret))

	// whoami reports the headers and the _meta its call arrived with.
	type seen struct {
		Headers map[string]string `json:"headers"`
		Meta    map[string]any    `json:"meta"`
	}
	decode := func(t *testing.T, sc any) seen {
		t.Helper()
		var s seen
		b, _ := json.Marshal(sc)
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("whoami result %s: %v", b, err)
		}
		return s
	}
	ctx := context.Background()
	mc := mcpClient(t, a.url, "2025-11-25")
	doors := []struct {
		name string
		door string
		call func(t *testing.T, tool string) seen
	}{
		{"REST", gateway.SpanRESTCall, func(t *testing.T, tool string) seen {
			code, res := a.do("POST", "/api/mcp/tools/"+tool+"/call", `{"arguments": {}, "thread_id": "t-trace"}`)
			if code != http.StatusOK || res["isError"] == true {
				t.Fatalf("%s: %d %v", tool, code, res)
			}
			return decode(t, res["structuredContent"])
		}},
		{"MCP", mcpserver.SpanMCPCall, func(t *testing.T, tool string) seen {
			res, err := mc.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool}})
			if err != nil || res.IsError {
				t.Fatalf("%s: %v %v", tool, res, err)
			}
			return decode(t, res.StructuredContent)
		}},
	}
	for _, d := range doors {
		for _, server := range []string{"stdio", "http"} {
			t.Run(d.name+"/"+server, func(t *testing.T) {
				exp.Reset()
				got := d.call(t, server+"_whoami")
				spans := exp.GetSpans()
				byName := map[string]tracetest.SpanStub{}
				for _, s := range spans {
					byName[s.Name] = s
				}
				door, ok := byName[d.door]
				if !ok {
					t.Fatalf("no %q span among %v", d.door, names(spans))
				}
				chain, ok := byName[dispatch.SpanChain]
				if !ok || chain.Parent.SpanID() != door.SpanContext.SpanID() {
					t.Fatalf("chain span %v is not the door's child (spans %v)", ok, names(spans))
				}
				up, ok := byName[dispatch.SpanUpstream+"tools/call"]
				if !ok || up.SpanContext.TraceID() != door.SpanContext.TraceID() {
					t.Fatalf("no upstream span in the door's trace (spans %v)", names(spans))
				}
				// The credential chain runs on every server (a layer a server
				// does not configure passes the call on), so it is in every tree.
				cred, ok := byName[dispatch.SpanInterceptor+"user_auth"]
				if !ok || cred.Parent.SpanID() != chain.SpanContext.SpanID() || up.Parent.SpanID() != cred.SpanContext.SpanID() {
					t.Fatalf("want door → chain → user_auth → upstream, spans %v", names(spans))
				}
				want := fmt.Sprintf("00-%s-%s-01", up.SpanContext.TraceID(), up.SpanContext.SpanID())
				if got.Meta["traceparent"] != want {
					t.Errorf("the upstream's _meta.traceparent = %v, want %s", got.Meta["traceparent"], want)
				}
				if server == "http" {
					if h := got.Headers["Traceparent"] + got.Headers["traceparent"]; h != want {
						t.Errorf("the upstream's traceparent header = %q, want %s (headers %v)", h, want, got.Headers)
					}
				}
				for _, s := range spans {
					for _, kv := range s.Attributes {
						if strings.Contains(kv.Value.Emit(), secret) {
							t.Errorf("span %s attribute %s holds the credential", s.Name, kv.Key)
						}
					}
					for _, ev := range s.Events {
						for _, kv := range ev.Attributes {
							if strings.Contains(kv.Value.Emit(), secret) {
								t.Errorf("span %s event %s holds the credential", s.Name, ev.Name)
							}
						}
					}
					if strings.Contains(s.Status.Description, secret) {
						t.Errorf("span %s status holds the credential", s.Name)
					}
				}
			})
		}
	}
}

// TestTraceContinuesTheCallersTrace: a call carrying a W3C traceparent
// header is traced as a child of the caller's span, on both doors.
func TestTraceContinuesTheCallersTrace(t *testing.T) {
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	traceparent := "00-" + traceID + "-" + parentID + "-01"
	for _, door := range []struct {
		name, span string
		call       func(t *testing.T, url string)
	}{
		{"rest", gateway.SpanRESTCall, func(t *testing.T, url string) {
			req, _ := http.NewRequest("POST", url+"/api/mcp/tools/stdio_echo/call", strings.NewReader(`{"arguments": {"message": "hi"}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("traceparent", traceparent)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
		}},
		{"mcp", mcpserver.SpanMCPCall, func(t *testing.T, url string) {
			c := mcpClient(t, url, mcp.ProtocolVersion20251125, transport.WithHTTPHeaders(map[string]string{"traceparent": traceparent}))
			req := mcp.CallToolRequest{}
			req.Params.Name, req.Params.Arguments = "stdio_echo", map[string]any{"message": "hi"}
			if res, err := c.CallTool(context.Background(), req); err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
		}},
	} {
		t.Run(door.name, func(t *testing.T) {
			a, exp := newTracedAPI(t, fmt.Sprintf(`{"mcpServers": {"stdio": {"command": %q}}}`, testmcp.Build(t)))
			door.call(t, a.url)
			for _, s := range exp.GetSpans() {
				if s.Name != door.span {
					continue
				}
				if s.SpanContext.TraceID().String() != traceID || s.Parent.SpanID().String() != parentID {
					t.Fatalf("door span in trace %s under %s, want %s under %s", s.SpanContext.TraceID(), s.Parent.SpanID(), traceID, parentID)
				}
				return
			}
			t.Fatalf("no door span among %v", names(exp.GetSpans()))
		})
	}
}

// newTracedAPI is newAPI with tracing on, its spans in the returned
// in-memory exporter.
func newTracedAPI(t *testing.T, doc string) (*api, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr := tracing.New(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path, Tracer: tr})
	t.Cleanup(cache.Close)
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler())
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL}, exp
}

// mcpClient is an MCP client of the gateway at base, initialized with
// protocol version, its transport made with opts.
func mcpClient(t *testing.T, base, version string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	ctx := context.Background()
	c, err := client.NewStreamableHttpClient(base+"/mcp", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = version
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

func names(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

// TestTraceDoorSpanFailsWithTheCall: on both doors, a call the model is
// answered with an error result for (the upstream failed) ends the door's
// span failed, its description the outcome word and never the upstream's
// text; an upstream tool's own error result (isError) is recorded as the
// outcome tool_error on a span that did not fail, as the call path's spans
// record it.
func TestTraceDoorSpanFailsWithTheCall(t *testing.T) {
	const canary = "sk-door-canary-5512"
	a, exp := newTracedAPI(t, fmt.Sprintf(`{"mcpServers": {"stdio": {"command": %q}, "reports": {"command": %q, %s}}}`,
		testmcp.Build(t), testmcp.BuildReports(t), testtask.ReportsToolset))
	ctx := context.Background()
	mc := mcpClient(t, a.url, "2025-11-25")

	doors := []struct {
		name string
		span string
		// call makes the call and reports whether the model got an error
		// result.
		call func(t *testing.T, tool string, args map[string]any) bool
	}{
		{"REST", gateway.SpanRESTCall, func(t *testing.T, tool string, args map[string]any) bool {
			body, _ := json.Marshal(map[string]any{"arguments": args, "thread_id": "t-trace", "secrets": map[string]string{"token": canary}})
			code, res := a.do("POST", "/api/mcp/tools/"+tool+"/call", string(body))
			if code != http.StatusOK {
				t.Fatalf("%s: %d %v", tool, code, res)
			}
			return res["isError"] == true
		}},
		{"MCP", mcpserver.SpanMCPCall, func(t *testing.T, tool string, args map[string]any) bool {
			res, err := mc.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
			if err != nil {
				t.Fatalf("%s: %v", tool, err)
			}
			return res.IsError
		}},
	}
	calls := []struct {
		name    string
		tool    string
		args    map[string]any
		outcome string
		status  codes.Code
	}{
		{"an upstream failure fails the door span", "stdio_write_file",
			map[string]any{"path": canary + "/out.txt", "content": canary, "rpc_error": true}, "failed", codes.Error},
		{"a durable task's submit the runtime cannot take fails the door span", "reports_submit_report",
			map[string]any{"topic": canary}, "failed", codes.Error},
		{"an upstream tool's error result is the outcome tool_error", "stdio_fail",
			map[string]any{"message": canary}, "tool_error", codes.Unset},
	}
	for _, d := range doors {
		for _, c := range calls {
			t.Run(d.name+"/"+c.name, func(t *testing.T) {
				exp.Reset()
				if !d.call(t, c.tool, c.args) {
					t.Fatal("the model got no error result")
				}
				var door *tracetest.SpanStub
				spans := exp.GetSpans()
				for i := range spans {
					if spans[i].Name == d.span {
						door = &spans[i]
					}
				}
				if door == nil {
					t.Fatalf("no %q span among %v", d.span, names(spans))
				}
				var outcome string
				for _, kv := range door.Attributes {
					if kv.Key == tracing.AttrOutcome {
						outcome = kv.Value.AsString()
					}
				}
				if door.Status.Code != c.status || outcome != c.outcome {
					t.Errorf("door span status %v %q, outcome %q; want %v, outcome %q", door.Status.Code, door.Status.Description, outcome, c.status, c.outcome)
				}
				if c.status == codes.Error && door.Status.Description != c.outcome {
					t.Errorf("door span description %q, want the outcome %q", door.Status.Description, c.outcome)
				}
				for _, s := range spans {
					if strings.Contains(s.Status.Description, canary) {
						t.Errorf("span %s status holds the canary: %q", s.Name, s.Status.Description)
					}
					for _, kv := range s.Attributes {
						if strings.Contains(kv.Value.Emit(), canary) {
							t.Errorf("span %s attribute %s holds the canary", s.Name, kv.Key)
						}
					}
				}
			})
		}
	}
}
