package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// An upstream server talks back while it works on a request: progress and
// log notifications, and requests of its own (sampling, elicitation, roots)
// that only the downstream client which caused the work can answer. A
// Relay carries them to that client. Each call that carries a Relay in its
// context registers it for its duration, and what the upstream sends is
// routed to it:
//
//   - notifications/progress by its progress token, which is replaced
//     upstream by one unique to the connection and restored on the way back
//     (two downstream clients may well pick the same token);
//   - a server request by the call whose stream carried it when the
//     transport says so (streamable HTTP hands the request the POST's
//     context, and a call without a relay gets an error); otherwise, on
//     stdio, whose session belongs to one user and thread, to the most
//     recent call in flight; on a connection shared by users (HTTP, SSE)
//     never to a guess: the upstream gets an error. (Even "the only call
//     in flight" is a guess there: the request may be about a call that
//     already ended, its user's, while the one in flight is another's.)
//   - notifications/message like a server request without a context: on
//     stdio to the most recent call; on a shared connection, where nothing
//     ties a log message to a call, to nobody (the host logs its arrival
//     at debug, without its data).

// DefaultRelayTimeout bounds how long a relayed server request waits for
// the downstream client's answer when Options.RelayTimeout is zero.
const DefaultRelayTimeout = 60 * time.Second

// Relay receives what an upstream sends about one downstream request.
type Relay interface {
	// Notify delivers a notification (notifications/progress with the
	// downstream's own progress token, notifications/message, ...). It runs
	// on the connection's reader and must not block.
	Notify(method string, params json.RawMessage)
	// Request asks the downstream client (sampling/createMessage,
	// elicitation/create, roots/list) and returns its raw result; an
	// *RPCError is passed to the upstream with its code and message; an
	// error wrapping ErrRespondLater sends nothing, the request being
	// answered later with Conn.Respond (its id is ServerRequestID(ctx)).
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

type relayKey struct{}

// WithRelay returns ctx carrying r: a CallTool or Request made with it
// relays what the upstream sends about that call to r.
func WithRelay(ctx context.Context, r Relay) context.Context {
	return context.WithValue(ctx, relayKey{}, r)
}

func relayFrom(ctx context.Context) Relay {
	r, _ := ctx.Value(relayKey{}).(Relay)
	return r
}

// ErrNoRelay is the cause of the error an upstream gets for a request no
// downstream client can answer.
var ErrNoRelay = errors.New("the client cannot answer")

// relayCall is one call in flight with a relay.
type relayCall struct {
	relay Relay
	token json.RawMessage // the downstream's progress token, nil if none
	// Guarded by the relays' mu: ended once the registration ends, when
	// stops (the requests relayed to the call) are stopped.
	ended bool
	stops map[*func()]struct{}
}

// relays is a connection's registry of calls in flight with a relay.
type relays struct {
	shared  bool // HTTP or SSE: one connection serves many users
	timeout time.Duration
	onNote  func(method string, params json.RawMessage) // Options.OnNotification
	log     *slog.Logger

	mu       sync.Mutex
	seq      uint64
	inflight []*relayCall          // in start order
	byToken  map[string]*relayCall // the upstream token (JSON) → call
}

func newRelays(shared bool, timeout time.Duration, onNote func(string, json.RawMessage), log *slog.Logger) *relays {
	if timeout <= 0 {
		timeout = DefaultRelayTimeout
	}
	return &relays{shared: shared, timeout: timeout, onNote: onNote, log: log, byToken: map[string]*relayCall{}}
}

type relayCallKey struct{}

// begin registers a call carrying r until the function it returns ends the
// registration, which the caller does when the call ends: a request relayed
// to the call ends with it. It returns the context to send the call with,
// which names the call to the server requests a transport handles with it;
// its params with the progress token replaced by one unique to the
// connection; and that function.
func (rs *relays) begin(ctx context.Context, r Relay, params any) (context.Context, any, func()) {
	call, params, end := rs.enter(r, params)
	return context.WithValue(ctx, relayCallKey{}, call), params, end
}

// enter is begin without the context: for a request whose server requests
// do not arrive with its context (a stdio server's come on the
// connection's), so only the connection's list finds the call.
func (rs *relays) enter(r Relay, params any) (*relayCall, any, func()) {
	call := &relayCall{relay: r}
	fields, token := progressToken(params, false)
	rs.mu.Lock()
	var upstream string
	if token != nil {
		rs.seq++
		up, _ := json.Marshal("antler-progress-" + strconv.FormatUint(rs.seq, 10))
		upstream = string(up)
		call.token = token
		rs.byToken[upstream] = call
		params = withProgressToken(fields, up)
	}
	rs.inflight = append(rs.inflight, call)
	rs.mu.Unlock()
	return call, params, func() {
		rs.mu.Lock()
		if upstream != "" {
			delete(rs.byToken, upstream)
		}
		for i, c := range rs.inflight {
			if c == call {
				rs.inflight = append(rs.inflight[:i], rs.inflight[i+1:]...)
				break
			}
		}
		call.ended = true
		stops := call.stops
		call.stops = nil
		rs.mu.Unlock()
		for stop := range stops {
			(*stop)()
		}
	}
}

// whileRuns calls stop when call's registration ends (at once if it has),
// until the function it returns is called.
func (rs *relays) whileRuns(call *relayCall, stop func()) (unregister func()) {
	rs.mu.Lock()
	if call.ended {
		rs.mu.Unlock()
		stop()
		return func() {}
	}
	if call.stops == nil {
		call.stops = map[*func()]struct{}{}
	}
	key := &stop
	call.stops[key] = struct{}{}
	rs.mu.Unlock()
	return func() {
		rs.mu.Lock()
		delete(call.stops, key)
		rs.mu.Unlock()
	}
}

// hasEnded reports whether call's registration has ended.
func (rs *relays) hasEnded(call *relayCall) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return call.ended
}

// pick is the call for a message that names none: see the package comment
// on relays. It is nil when there is none, or no safe one: always on a
// connection shared by users.
func (rs *relays) pick() *relayCall {
	if rs.shared {
		return nil // whose call it is about, the message does not say
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if n := len(rs.inflight); n > 0 {
		return rs.inflight[n-1]
	}
	return nil
}

// notify routes one notification from the upstream.
func (rs *relays) notify(n mcp.JSONRPCNotification) {
	params, err := json.Marshal(n.Params)
	if err != nil {
		return
	}
	switch n.Method {
	case string(mcp.MethodNotificationProgress):
		fields, token := progressToken(json.RawMessage(params), true)
		if token == nil {
			return
		}
		rs.mu.Lock()
		call := rs.byToken[string(token)]
		rs.mu.Unlock()
		if call == nil {
			return // a call that ended, or a token the host never sent
		}
		fields["progressToken"] = call.token
		params, _ = json.Marshal(fields)
		call.relay.Notify(n.Method, params)
	case mcp.MethodNotificationToolsListChanged, mcp.MethodNotificationResourcesListChanged,
		mcp.MethodNotificationPromptsListChanged, mcp.MethodNotificationResourceUpdated:
		if rs.onNote != nil {
			rs.onNote(n.Method, params)
		}
	default:
		if call := rs.pick(); call != nil {
			call.relay.Notify(n.Method, params)
		} else if rs.shared && rs.log != nil {
			rs.log.Debug("upstream notification names no call on a connection shared by users: not relayed", "method", n.Method)
		}
	}
}

// relayedMethods are the server requests a relay answers.
var relayedMethods = map[string]bool{
	string(mcp.MethodSamplingCreateMessage): true,
	string(mcp.MethodElicitationCreate):     true,
	string(mcp.MethodListRoots):             true,
}

// handler answers the server requests a relay can take and passes the
// others (ping) to next. A relayed request always gets a response, never an
// error, so its message reaches the upstream as written here.
func (rs *relays) handler(next transport.RequestHandler) transport.RequestHandler {
	return func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		if !relayedMethods[req.Method] {
			return next(ctx, req)
		}
		// Streamable HTTP hands the request the context of the POST whose
		// stream carried it, bounded by mcp-go at 30 s: the call's own end
		// and RelayTimeout bound it instead. Elsewhere the context is the
		// connection's.
		base := ctx
		call, _ := ctx.Value(relayCallKey{}).(*relayCall)
		_, ofCall := ctx.Value(capCallKey{}).(*capCall)
		switch {
		case call != nil:
			base = context.WithoutCancel(ctx)
		case ofCall:
			// The stream of a call made without a relay: nobody to ask,
			// and never another call's client.
		default:
			call = rs.pick()
		}
		if call == nil {
			why := "no downstream request in flight on this connection can take it"
			switch {
			case ofCall:
				why = "the request that caused it was made without a client to ask"
			case rs.shared:
				why = "this connection is shared by several users' requests and this one names none of them"
			}
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR,
				fmt.Sprintf("%v %s: %s", ErrNoRelay, req.Method, why), nil), nil
		}
		rctx, cancel := context.WithTimeout(base, rs.timeout)
		defer cancel()
		defer rs.whileRuns(call, cancel)()
		var params json.RawMessage
		if req.Params != nil {
			b, err := json.Marshal(req.Params)
			if err != nil {
				return transport.NewJSONRPCErrorResponse(req.ID, mcp.INVALID_PARAMS, err.Error(), nil), nil
			}
			params = b
		}
		res, err := call.relay.Request(withServerRequestID(rctx, req.ID), req.Method, params)
		var rpcErr *RPCError
		switch {
		case errors.Is(err, ErrRespondLater):
			return nil, nil // held: Conn.Respond answers it (respond.go)
		case errors.As(err, &rpcErr):
			return transport.NewJSONRPCErrorResponse(req.ID, rpcErr.Code, rpcErr.Message, nil), nil
		case err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded) && !rs.hasEnded(call):
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.REQUEST_INTERRUPTED,
				fmt.Sprintf("%s: the client did not answer within %s", req.Method, rs.timeout), nil), nil
		case err != nil:
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR,
				fmt.Sprintf("%s: the client could not answer: %v", req.Method, err), nil), nil
		case len(res) == 0:
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR,
				fmt.Sprintf("%s: the client returned no result", req.Method), nil), nil
		}
		return transport.NewJSONRPCResultResponse(req.ID, res), nil
	}
}

// progressToken decodes params as an object and returns its fields and its
// progress token: the progressToken field of a progress notification's
// params, or _meta.progressToken in a request's.
func progressToken(params any, notification bool) (map[string]json.RawMessage, json.RawMessage) {
	if params == nil {
		return nil, nil
	}
	raw, ok := params.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, nil
		}
		raw = b
	}
	// Without the key's bytes, and without an escape that could spell it,
	// there is no token: most requests carry none, and are not decoded.
	if !bytes.Contains(raw, []byte("progressToken")) && !bytes.ContainsRune(raw, '\\') {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return nil, nil
	}
	if notification {
		if tok, ok := fields["progressToken"]; ok && string(tok) != "null" {
			return fields, tok
		}
		return nil, nil
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(fields["_meta"], &meta) != nil {
		return nil, nil
	}
	if tok, ok := meta["progressToken"]; ok && string(tok) != "null" {
		return fields, tok
	}
	return nil, nil
}

// withProgressToken sets _meta.progressToken in a request's fields.
func withProgressToken(fields map[string]json.RawMessage, token json.RawMessage) json.RawMessage {
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(fields["_meta"], &meta)
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	meta["progressToken"] = token
	fields["_meta"], _ = json.Marshal(meta)
	b, _ := json.Marshal(fields)
	return b
}

// inputHandler answers, through the call's relay, the input requests of a
// multi round-trip result (2026-07-28, where a server asks within its
// result instead of sending requests): mcp-go fulfils them with the call's
// own context.
type inputHandler struct{ rs *relays }

func (h inputHandler) ask(ctx context.Context, method string, params, result any) error {
	r := relayFrom(ctx)
	if r == nil {
		return fmt.Errorf("%s: %w %s (the request was not made for a client that can)", method, ErrNoRelay, method)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, h.rs.timeout)
	defer cancel()
	res, err := r.Request(rctx, method, raw)
	switch {
	case err != nil && rctx.Err() != nil && ctx.Err() == nil:
		return fmt.Errorf("%s: the client did not answer within %s: %w", method, h.rs.timeout, err)
	case err != nil:
		return fmt.Errorf("%s: the client could not answer: %w", method, err)
	}
	return json.Unmarshal(res, result)
}

func (h inputHandler) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var res mcp.CreateMessageResult
	if err := h.ask(ctx, string(mcp.MethodSamplingCreateMessage), req.CreateMessageParams, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (h inputHandler) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	var res mcp.ElicitationResult
	if err := h.ask(ctx, string(mcp.MethodElicitationCreate), req.Params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
