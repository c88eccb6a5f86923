package dispatch

import (
	"context"
	"encoding/json"
	"maps"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/antler-mcp/antler/internal/interceptor"
	"github.com/antler-mcp/antler/internal/metrics"
	"github.com/antler-mcp/antler/internal/tracing"
)

// Span names of the call path.
const (
	SpanChain       = "antler.chain"
	SpanInterceptor = "antler.interceptor "
	SpanUpstream    = "antler.upstream "
)

// traced is run's path with tracing on: a span for the chain, one per
// interceptor (each the child of the one before it, as the chain nests),
// and a client span for the upstream request whose context the request
// carries upstream. Attributes name the server, the tool, the method, the
// transport and the outcome; never an argument, a header or an identity.
func (ep *Endpoint) traced(ctx context.Context, chain []interceptor.Interceptor, t target, ireq *interceptor.Request, downstream map[string]any, send wireFunc, translate bool) (json.RawMessage, error) {
	attrs := []attribute.KeyValue{tracing.AttrServer.String(t.server), tracing.AttrMCPMethod.String(t.method), tracing.AttrTransport.String(ep.server.Type)}
	if t.tool != "" {
		attrs = append(attrs, tracing.AttrTool.String(t.tool))
	}
	stdio := ep.server.IsStdio()
	base := func(ctx context.Context, r *interceptor.Request) (json.RawMessage, error) {
		ctx, span := ep.tracer.Start(ctx, SpanUpstream+t.method, trace.SpanKindClient, attrs...)
		meta := maps.Clone(wireMeta(downstream, stdio, r.Headers)) // written below; may be the door's own
		if meta == nil {
			meta = make(map[string]any, 2)
		}
		parent, state := ep.tracer.Inject(ctx)
		delete(meta, tracing.KeyTracestate) // the caller's, if any, is replaced by this span's
		meta[tracing.KeyTraceparent] = parent
		if state != "" {
			meta[tracing.KeyTracestate] = state
		}
		if !stdio {
			h := maps.Clone(r.Headers)
			if h == nil {
				h = map[string]string{}
			}
			h[tracing.KeyTraceparent] = parent
			if state != "" {
				h[tracing.KeyTracestate] = state
			}
			r.Headers = h
		}
		raw, err := ep.wire(ctx, t, r, meta, send, translate)
		end(span, raw, err)
		return raw, err
	}
	wrapped := make([]interceptor.Interceptor, len(chain))
	for i, ic := range chain {
		name := interceptor.NameOf(ic)
		wrapped[i] = interceptor.Func(func(ctx context.Context, req *interceptor.Request, next interceptor.Handler) (json.RawMessage, error) {
			ctx, span := ep.tracer.Start(ctx, SpanInterceptor+name, trace.SpanKindInternal, append(attrs, tracing.AttrLayer.String(name))...)
			raw, err := ic.Intercept(ctx, req, next)
			end(span, raw, err)
			return raw, err
		})
	}
	ctx, span := ep.tracer.Start(ctx, SpanChain, trace.SpanKindInternal, attrs...)
	raw, err := interceptor.Chain(base, wrapped...)(ctx, ireq)
	end(span, raw, err)
	return raw, err
}

// DoorSpan is a door's server span for one tools/call.
type DoorSpan struct {
	// Name is the span's name (a door's own: "antler.rest tools/call").
	Name string
	// Door is DoorREST or DoorMCP; Method, when set, the MCP method.
	Door, Method string
	// Tool is the tool's exposed name, Server its server ("" when unknown).
	Tool, Server string
	// TraceParent and TraceState are the caller's W3C trace context ("":
	// none; the span starts a trace).
	TraceParent, TraceState string
}

// StartDoorSpan starts d under the caller's trace context and returns the
// context carrying it and end, which ends it with the call's outcome as
// EndSpan does. With tr nil (tracing off) nothing starts and end does
// nothing.
func StartDoorSpan(ctx context.Context, tr *tracing.Tracer, d DoorSpan) (_ context.Context, end func(json.RawMessage, error)) {
	if tr == nil {
		return ctx, func(json.RawMessage, error) {}
	}
	attrs := make([]attribute.KeyValue, 0, 4)
	attrs = append(attrs, tracing.AttrDoor.String(d.Door))
	if d.Method != "" {
		attrs = append(attrs, tracing.AttrMCPMethod.String(d.Method))
	}
	attrs = append(attrs, tracing.AttrTool.String(d.Tool))
	if d.Server != "" {
		attrs = append(attrs, tracing.AttrServer.String(d.Server))
	}
	ctx, span := tr.StartRemote(ctx, d.Name, d.TraceParent, d.TraceState, attrs...)
	return ctx, func(raw json.RawMessage, err error) { EndSpan(span, raw, err) }
}

// EndSpan ends a door's span with the call's outcome (ok, tool_error,
// denied, failed), as the call path's spans record it: a failed or denied
// call is status Error with the outcome as its description, even when the
// door then answers the model with an error result. Both doors end theirs
// with it.
func EndSpan(span trace.Span, raw json.RawMessage, err error) { end(span, raw, err) }

// end ends a call path span with the request's outcome.
func end(span trace.Span, raw json.RawMessage, err error) {
	o := outcome(raw, err)
	if _, denied := interceptor.IsDenied(err); denied {
		o = metrics.OutcomeDenied
	}
	if err != nil {
		tracing.Fail(span, o)
	} else {
		span.SetAttributes(tracing.AttrOutcome.String(o))
	}
	span.End()
}
