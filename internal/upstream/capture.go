package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// mcp-go decodes results into typed structs, which drops schema keywords such
// as $schema, oneOf and minProperties from tool lists. captureTransport sits
// between the mcp-go client and its transport and keeps the raw JSON result of
// the requests a caller asked for, so the client still does the protocol work
// (version negotiation, _meta, headers) and Antler still sees the bytes.

type captureKey struct{}

// MaxListPages bounds the pages of one listing: a server that hands out a
// new cursor forever is refused after this many, however small its pages.
const MaxListPages = 1000

// ListingTooLargeError is a listing (every page of one tools/list) that
// passed max_result_bytes in total, or MaxListPages pages. Its pages were
// held only up to the limit.
type ListingTooLargeError struct {
	Limit int64 // max_result_bytes, when the bytes ran over
	Pages int   // MaxListPages, when the pages ran over
}

func (e *ListingTooLargeError) Error() string {
	if e.Pages > 0 {
		return fmt.Sprintf("upstream listing longer than %d pages", e.Pages)
	}
	return fmt.Sprintf("upstream listing larger than max_result_bytes (%d bytes over all its pages)", e.Limit)
}

// capture collects the raw results of the methods sent under a context.
type capture struct {
	methods []string

	mu      sync.Mutex
	results []json.RawMessage
	size    int64 // bytes of results
	rpcErr  *RPCError
}

func withCapture(ctx context.Context, methods ...string) (context.Context, *capture) {
	c := &capture{methods: methods}
	return context.WithValue(ctx, captureKey{}, c), c
}

func (c *capture) matches(method string) bool {
	return slices.Contains(c.methods, method)
}

// record keeps one result; the results of all pages together stay within
// limit bytes and MaxListPages pages, or the request fails.
func (c *capture) record(resp *transport.JSONRPCResponse, limit int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp.Error != nil {
		c.rpcErr = &RPCError{Code: resp.Error.Code, Message: resp.Error.Message}
		return nil
	}
	switch {
	case c.size+int64(len(resp.Result)) > limit:
		return &ListingTooLargeError{Limit: limit}
	case len(c.results) >= MaxListPages:
		return &ListingTooLargeError{Pages: MaxListPages}
	}
	c.size += int64(len(resp.Result))
	c.results = append(c.results, append(json.RawMessage(nil), resp.Result...))
	return nil
}

func (c *capture) last() (json.RawMessage, *RPCError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.results) == 0 {
		return nil, c.rpcErr
	}
	return c.results[len(c.results)-1], c.rpcErr
}

func (c *capture) all() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.results
}

// captureTransport wraps a transport; the optional interfaces mcp-go looks
// for are forwarded so wrapping changes nothing else.
type captureTransport struct {
	transport.Interface
	cap    *resultCap   // max_result_bytes
	gate   *requestGate // nil: mcp-go answers the server's requests itself
	relays *relays
}

var _ transport.BidirectionalInterface = (*captureTransport)(nil)

func (t *captureTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	// A response the readers found too large fails its request with the cap
	// error, whatever the transport made of the cut message.
	call, err := t.cap.begin(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	defer t.cap.finish(call)
	sendCtx := call.ctx
	if r := relayFrom(ctx); r != nil {
		var end func()
		sendCtx, req.Params, end = t.relays.begin(sendCtx, r, req.Params)
		defer end()
	}
	resp, err := t.Interface.SendRequest(sendCtx, req)
	if cerr := call.err(); cerr != nil {
		return nil, cerr
	}
	if err == nil && resp != nil {
		if c, ok := ctx.Value(captureKey{}).(*capture); ok && c.matches(req.Method) {
			if err := c.record(resp, t.cap.max); err != nil {
				return nil, err
			}
		}
	}
	return resp, err
}

// SetNotificationHandler routes the upstream's notifications to the relays
// (and Options.OnNotification) before mcp-go sees them.
func (t *captureTransport) SetNotificationHandler(h func(mcp.JSONRPCNotification)) {
	t.Interface.SetNotificationHandler(func(n mcp.JSONRPCNotification) {
		t.relays.notify(n)
		h(n)
	})
}

func (t *captureTransport) SetRequestHandler(h transport.RequestHandler) {
	if b, ok := t.Interface.(transport.BidirectionalInterface); ok {
		h = t.relays.handler(h)
		if t.gate != nil {
			h = t.gate.wrap(h)
		}
		b.SetRequestHandler(h)
	}
}

// captureHTTPTransport is the wrapper for HTTP transports, which mcp-go
// recognises by their SetProtocolVersion method.
type captureHTTPTransport struct {
	*captureTransport
	http transport.HTTPConnection
}

var _ transport.HTTPConnection = captureHTTPTransport{}

func (t captureHTTPTransport) SetProtocolVersion(v string) { t.http.SetProtocolVersion(v) }

func (t captureHTTPTransport) SetConnectionLostHandler(h func(error)) {
	if s, ok := t.http.(interface{ SetConnectionLostHandler(func(error)) }); ok {
		s.SetConnectionLostHandler(h)
	}
}

func wrapTransport(inner transport.Interface, rc *resultCap, gate *requestGate, rs *relays) transport.Interface {
	base := &captureTransport{Interface: inner, cap: rc, gate: gate, relays: rs}
	if h, ok := inner.(transport.HTTPConnection); ok {
		return captureHTTPTransport{captureTransport: base, http: h}
	}
	return base
}
