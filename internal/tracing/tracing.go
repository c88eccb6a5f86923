// Package tracing owns Antler's OpenTelemetry traces: the tracer provider
// built from the standard OTEL_* environment variables, the span helpers the
// doors, the call path and the task runtime use, and the W3C trace context
// carried to upstream servers (the traceparent header on HTTP, the
// traceparent and tracestate keys of a request's _meta on every transport).
//
// Tracing is off unless an exporter is configured: the off state is a nil
// *Tracer, and every caller checks for nil before building a span, so a
// call costs nothing more than that check.
package tracing

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of Antler's spans and the service name
// used when OTEL_SERVICE_NAME is not set.
const Name = "antler"

// The W3C trace context keys: HTTP header names and the _meta keys of an MCP
// request's params.
const (
	KeyTraceparent = "traceparent"
	KeyTracestate  = "tracestate"
)

// Attribute keys of Antler's spans. None of them ever holds an argument, a
// header value, a thread id or a credential.
const (
	AttrServer     = attribute.Key("antler.server")
	AttrTool       = attribute.Key("antler.tool")
	AttrDoor       = attribute.Key("antler.door")
	AttrTransport  = attribute.Key("antler.transport")
	AttrLayer      = attribute.Key("antler.interceptor")
	AttrOutcome    = attribute.Key("antler.outcome")
	AttrTaskDriver = attribute.Key("antler.task.driver")
	AttrMCPMethod  = attribute.Key("mcp.method.name")
)

// Tracer makes Antler's spans. A nil *Tracer is tracing switched off: its
// methods do nothing, and callers check for nil before building attributes.
type Tracer struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TextMapPropagator
}

// Options configure FromEnv.
type Options struct {
	// Lookup reads the environment (nil: os.LookupEnv). The exporters read
	// their endpoint, header and timeout variables from the process
	// environment themselves.
	Lookup func(string) (string, bool)
	// Console is where OTEL_TRACES_EXPORTER=console writes (nil: stderr).
	Console io.Writer
}

// FromEnv builds the tracer the OTEL_* environment asks for, or nil when
// tracing is off: OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER unset,
// empty or "none". OTEL_TRACES_EXPORTER=otlp exports over
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (or OTEL_EXPORTER_OTLP_PROTOCOL):
// "http/protobuf" (the default) or "grpc"; "console" writes JSON spans to
// Options.Console. The service name is OTEL_SERVICE_NAME, "antler" by
// default; OTEL_RESOURCE_ATTRIBUTES and OTEL_TRACES_SAMPLER apply as the SDK
// reads them.
func FromEnv(ctx context.Context, opts Options) (*Tracer, error) {
	lookup := opts.Lookup
	if lookup == nil {
		lookup = os.LookupEnv
	}
	get := func(k string) string {
		v, _ := lookup(k)
		return strings.TrimSpace(v)
	}
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return nil, nil
	}
	var exp sdktrace.SpanExporter
	var err error
	switch kind := strings.ToLower(get("OTEL_TRACES_EXPORTER")); kind {
	case "", "none":
		return nil, nil
	case "otlp":
		protocol := get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
		if protocol == "" {
			protocol = get("OTEL_EXPORTER_OTLP_PROTOCOL")
		}
		switch protocol {
		case "", "http/protobuf":
			exp, err = otlptracehttp.New(ctx)
		case "grpc":
			exp, err = otlptracegrpc.New(ctx)
		default:
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: unsupported protocol %q (want grpc or http/protobuf)", protocol)
		}
	case "console":
		w := opts.Console
		if w == nil {
			w = os.Stderr
		}
		exp, err = stdouttrace.New(stdouttrace.WithWriter(w))
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: unsupported exporter %q (want otlp, console or none)", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("trace exporter: %w", err)
	}
	service := get("OTEL_SERVICE_NAME")
	if service == "" {
		service = Name
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", service)))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return New(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// New returns a tracer over a provider built with opts (a test passes
// sdktrace.WithSpanProcessor with an in-memory recorder).
func New(opts ...sdktrace.TracerProviderOption) *Tracer {
	p := sdktrace.NewTracerProvider(opts...)
	return &Tracer{provider: p, tracer: p.Tracer(Name),
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
}

// Shutdown flushes the spans not exported yet and stops the provider.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

// Start starts a span named name as a child of ctx's span.
func (t *Tracer) Start(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// StartRemote starts a server span whose parent is the caller's W3C trace
// context (traceparent, tracestate: an HTTP header's or a request _meta's
// values; "" for none, which makes a root span).
func (t *Tracer) StartRemote(ctx context.Context, name, traceparent, tracestate string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	if traceparent != "" {
		ctx = t.prop.Extract(ctx, carrier{KeyTraceparent: traceparent, KeyTracestate: tracestate})
	}
	return t.Start(ctx, name, trace.SpanKindServer, attrs...)
}

// StartLinked starts a root span (a trace of its own) linked to the span
// whose context traceparent holds, the way a durable task's background
// polls and notification deliveries point at the call that submitted it.
// An empty or malformed traceparent makes an unlinked root.
func (t *Tracer) StartLinked(ctx context.Context, name, traceparent string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...)}
	if traceparent != "" {
		sc := trace.SpanContextFromContext(t.prop.Extract(context.Background(), carrier{KeyTraceparent: traceparent}))
		if sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	return t.tracer.Start(ctx, name, opts...)
}

// Inject returns ctx's span context as W3C values ("" when ctx has no valid
// span).
func (t *Tracer) Inject(ctx context.Context) (traceparent, tracestate string) {
	if t == nil {
		return "", ""
	}
	c := carrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c[KeyTraceparent], c[KeyTracestate]
}

// End ends span, marking it failed when err is not nil. The error's text is
// not recorded: a failure's text may quote what an upstream said, so only
// its status is kept and the outcome attribute says what kind it was.
func End(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// Fail marks span failed with outcome (a short fixed word, never a value
// taken from the request or the upstream).
func Fail(span trace.Span, outcome string) {
	span.SetAttributes(AttrOutcome.String(outcome))
	span.SetStatus(codes.Error, outcome)
}

// carrier is a TextMapCarrier over the two trace context keys.
type carrier map[string]string

var _ propagation.TextMapCarrier = carrier(nil)

func (c carrier) Get(key string) string { return c[strings.ToLower(key)] }
func (c carrier) Set(key, value string) { c[strings.ToLower(key)] = value }
func (c carrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
