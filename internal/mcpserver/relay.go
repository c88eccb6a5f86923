package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/upstream"
)

// What an upstream sends about a tools/call while it runs reaches the
// downstream session that made the call: each call on /mcp carries a
// sessionRelay (an upstream.Relay) in its context. Progress and log
// notifications go to the call's session; sampling, elicitation and roots
// requests are asked of that session's client, which must have declared
// the capability. mcp-go carries them, within its limits:
//
//   - A streamable-HTTP session (2024-11-05…2025-11-25) has one queue of
//     notifications for all its streams: a notification reaches the client
//     on the call's own POST stream, or on the session's GET stream when
//     one is open and takes it first (then it may arrive after the result).
//     A 2026-07-28 request is its own session: its notifications always go
//     on its own stream, before the result.
//   - elicitation/create goes on the call's POST stream; sampling and roots
//     go only on the session's GET stream, so a client that has none open
//     is told so at once rather than left to time out.
//   - Legacy HTTP+SSE sessions take notifications but no server requests.
//   - 2026-07-28 removed server requests for multi round-trip results: the
//     upstream call is suspended across the client's retries (see rounds).

// forwardedNotifications are the notifications a call's session is sent.
var forwardedNotifications = map[string]bool{
	string(mcp.MethodNotificationProgress):            true,
	string(mcp.MethodNotificationMessage):             true,
	string(mcp.MethodNotificationElicitationComplete): true,
}

// sessionRelay is the upstream.Relay of one tools/call on /mcp.
type sessionRelay struct {
	srv *Server
	// call is the call's handler context: it names the session (and, for
	// streamable HTTP, the POST stream) whatever the upstream sends reaches.
	call context.Context
}

var _ upstream.Relay = (*sessionRelay)(nil)

// withRelay returns the call's context carrying its relay.
func (s *Server) withRelay(ctx context.Context) context.Context {
	return upstream.WithRelay(ctx, &sessionRelay{srv: s, call: ctx})
}

// Notify sends a progress, log or elicitation-complete notification to the
// call's session; others are not the client's business. It never blocks:
// mcp-go drops a notification its session queue has no room for.
func (r *sessionRelay) Notify(method string, params json.RawMessage) {
	if !forwardedNotifications[method] {
		return
	}
	fields, err := decodeObject(params)
	if err != nil {
		r.srv.log.Debug("upstream notification not relayable", "method", method, "error", err.Error())
		return
	}
	if method == string(mcp.MethodNotificationMessage) {
		// mcp-go filters it by the level the client set (or, on
		// 2026-07-28, declared on the request).
		var n mcp.LoggingMessageNotification
		n.Method = method
		if lvl, ok := fields["level"].(string); ok {
			n.Params.Level = mcp.LoggingLevel(lvl)
		}
		n.Params.Logger, _ = fields["logger"].(string)
		n.Params.Data = fields["data"]
		err = r.srv.mcp.SendLogMessageToClient(r.call, n)
	} else {
		err = r.srv.mcp.SendNotificationToClient(r.call, method, fields)
	}
	if err != nil {
		r.srv.log.Debug("upstream notification not relayed", "method", method, "error", err.Error())
	}
}

// Request asks the call's client and returns its answer. A client that
// cannot answer (no such capability, no stream to ask on, a 2026-07-28
// client) gets the upstream a clear *upstream.RPCError.
func (r *sessionRelay) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	// The call's context holds the session and stream; ctx bounds the
	// wait (RelayTimeout, the call's end).
	ask, cancel := context.WithCancel(r.call)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()

	feature, err := r.askable(ask, method)
	if err != nil {
		return nil, err
	}
	var res any
	switch method {
	case string(mcp.MethodSamplingCreateMessage):
		var p mcp.CreateMessageParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams(method, err)
		}
		res, err = r.srv.mcp.RequestSampling(ask, mcp.CreateMessageRequest{CreateMessageParams: p})
	case string(mcp.MethodElicitationCreate):
		var p mcp.ElicitationParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, invalidParams(method, err)
		}
		res, err = r.srv.mcp.RequestElicitation(ask, mcp.ElicitationRequest{Params: p})
	case string(mcp.MethodListRoots):
		res, err = r.srv.mcp.RequestRoots(ask, mcp.ListRootsRequest{})
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", method, ctx.Err())
		}
		return nil, clientError(method, feature, err)
	}
	return json.Marshal(res)
}

// askable checks that the call's client can be asked method, and names the
// capability it needs.
func (r *sessionRelay) askable(ctx context.Context, method string) (string, error) {
	feature, err := featureOf(method)
	if err != nil {
		return "", err
	}
	if server.IsModernRequest(r.call) {
		return feature, &upstream.RPCError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf(
			"the MCP client of this request uses protocol %s, which has no server requests (%s goes in the call's result)",
			mcp.ProtocolVersion20260728, method)}
	}
	cs := server.ClientSessionFromContext(r.call)
	info, ok := cs.(server.SessionWithClientInfo)
	if cs == nil || !ok || !clientDeclares(info.GetClientCapabilities(), feature) {
		return feature, notSupported(feature)
	}
	var carries bool
	switch feature {
	case "sampling":
		_, carries = cs.(server.SessionWithSampling)
	case "elicitation":
		_, carries = cs.(server.SessionWithElicitation)
	case "roots":
		_, carries = cs.(server.SessionWithRoots)
	}
	if !carries {
		return feature, &upstream.RPCError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf(
			"the transport of this MCP session (legacy HTTP+SSE) carries no %s requests to its client", method)}
	}
	if _, streamable := cs.(server.SessionWithStreamableHTTPConfig); streamable && feature != "elicitation" && !r.srv.listeners.open(ctx, cs.SessionID()) {
		return feature, &upstream.RPCError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf(
			"the MCP client of this session has no GET stream open on /mcp, the only stream %s requests reach it on (waited %s)", method, streamGrace)}
	}
	return feature, nil
}

// featureOf is the client capability a relayed method needs.
func featureOf(method string) (string, error) {
	switch method {
	case string(mcp.MethodSamplingCreateMessage):
		return "sampling", nil
	case string(mcp.MethodElicitationCreate):
		return "elicitation", nil
	case string(mcp.MethodListRoots):
		return "roots", nil
	}
	return "", &upstream.RPCError{Code: mcp.METHOD_NOT_FOUND, Message: method + ": not relayed to MCP clients"}
}

// clientDeclares reports whether a client's caps include feature.
func clientDeclares(caps mcp.ClientCapabilities, feature string) bool {
	switch feature {
	case "sampling":
		return caps.Sampling != nil
	case "elicitation":
		return caps.Elicitation != nil
	case "roots":
		return caps.Roots != nil
	}
	return false
}

func notSupported(feature string) error {
	return &upstream.RPCError{Code: mcp.METHOD_NOT_FOUND, Message: "the MCP client of this session does not support " + feature}
}

func invalidParams(method string, err error) error {
	return &upstream.RPCError{Code: mcp.INVALID_PARAMS, Message: method + ": " + err.Error()}
}

// labelled is how mcp-go reports a client's JSON-RPC error to a server
// request: "<method> error <code>: <message>".
var labelled = regexp.MustCompile(`^\S+ error (-?\d+): (.*)$`)

// clientError turns mcp-go's error for a server request into the one the
// upstream gets: the client's own code and message when it answered with
// an error.
func clientError(method, feature string, err error) error {
	if m := labelled.FindStringSubmatch(err.Error()); m != nil {
		if code, convErr := strconv.Atoi(m[1]); convErr == nil {
			return &upstream.RPCError{Code: code, Message: m[2]}
		}
	}
	switch {
	case errors.Is(err, server.ErrElicitationNotSupported), errors.Is(err, server.ErrRootsNotSupported),
		strings.Contains(err.Error(), "does not support sampling"):
		return notSupported(feature)
	}
	return fmt.Errorf("%s: %w", method, err)
}

// decodeObject decodes a JSON object keeping numbers as written.
func decodeObject(raw json.RawMessage) (map[string]any, error) {
	fields := map[string]any{}
	if len(bytes.TrimSpace(raw)) == 0 {
		return fields, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil {
		return nil, err
	}
	return fields, nil
}

// upstreamMeta is the _meta of a downstream tools/call forwarded upstream:
// its progress token and the caller's own keys, without Antler's identity
// carrier (secrets never leave the host that way) and without the protocol
// keys of the downstream hop (the upstream connection declares its own).
// The log level is the call's: the one a 2026-07-28 client declared on it,
// else the one the session set (mcp-go's default, error, if none), so a
// 2026-07-28 upstream logs to the caller at the caller's level.
//
// The map is read-only: the usual one, a session's level and nothing else,
// is shared by every call at that level (levelMeta).
func upstreamMeta(ctx context.Context, m *mcp.Meta) map[string]any {
	return callMeta(m, server.IsModernRequest(ctx), server.ClientSessionFromContext(ctx))
}

// callMeta is upstreamMeta for a call whose revision and session (nil for
// none) the caller knows: the door's own calls, which look neither up.
func callMeta(m *mcp.Meta, modern bool, session server.ClientSession) map[string]any {
	var out map[string]any
	if m != nil {
		for k, v := range m.AdditionalFields {
			switch {
			case strings.HasPrefix(k, "antler/"),
				k == mcp.MetaKeyProtocolVersion, k == mcp.MetaKeyClientInfo, k == mcp.MetaKeyClientCapabilities:
				continue
			}
			if out == nil {
				out = map[string]any{}
			}
			out[k] = v
		}
		if m.ProgressToken != nil {
			if out == nil {
				out = map[string]any{}
			}
			out["progressToken"] = m.ProgressToken
		}
	}
	if _, ok := out[mcp.MetaKeyLogLevel]; !ok && !modern {
		if ls, ok := session.(server.SessionWithLogging); ok {
			if out == nil {
				return levelMeta(ls.GetLogLevel())
			}
			out[mcp.MetaKeyLogLevel] = string(ls.GetLogLevel())
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// levelMetas are levelMeta's maps, one per MCP log level.
var levelMetas = func() map[mcp.LoggingLevel]map[string]any {
	out := map[mcp.LoggingLevel]map[string]any{}
	for _, l := range []mcp.LoggingLevel{mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelNotice,
		mcp.LoggingLevelWarning, mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency} {
		out[l] = map[string]any{mcp.MetaKeyLogLevel: string(l)}
	}
	return out
}()

// levelMeta is the read-only _meta {logLevel: level}: shared for an MCP
// level (mcp-go accepts no other from logging/setLevel), new for any other.
func levelMeta(level mcp.LoggingLevel) map[string]any {
	if m, ok := levelMetas[level]; ok {
		return m
	}
	return map[string]any{mcp.MetaKeyLogLevel: string(level)}
}

// listeners counts the GET streams open on each streamable-HTTP session:
// mcp-go sends sampling and roots requests only there.
type listeners struct {
	mu sync.Mutex
	n  map[string]int
	// opening is closed, and replaced, whenever a stream opens.
	opening chan struct{}
}

// streamGrace is how long a sampling or roots request waits for the
// session's GET stream: a client opens it just after initialize, perhaps
// while its first call is already under way.
const streamGrace = 5 * time.Second

// opened records a GET stream of session id and returns the function that
// records its end.
func (l *listeners) opened(id string) func() {
	l.mu.Lock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[id]++
	if l.opening != nil {
		close(l.opening)
		l.opening = nil
	}
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.n[id]--; l.n[id] <= 0 {
			delete(l.n, id)
		}
	}
}

// open reports whether session id has a GET stream open, waiting up to
// streamGrace (or ctx's end) for one.
func (l *listeners) open(ctx context.Context, id string) bool {
	grace := time.NewTimer(streamGrace)
	defer grace.Stop()
	for {
		l.mu.Lock()
		if l.n[id] > 0 {
			l.mu.Unlock()
			return true
		}
		if l.opening == nil {
			l.opening = make(chan struct{})
		}
		opening := l.opening
		l.mu.Unlock()
		select {
		case <-opening:
		case <-grace.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// A 2026-07-28 client is never sent a request: a server that needs its
// input returns a result asking for it (resultType "input_required", with
// inputRequests and a requestState), and the client calls again with the
// answers. An upstream call is one request on the upstream side, so the
// door suspends it: the first round runs the call and, when the upstream
// asks, answers the client with the question under a fresh requestState;
// the retry carrying that state hands the answer to the waiting upstream
// request and waits for the call's next question or its result.

// statePrefix starts every requestState the door mints.
const statePrefix = "antler-round-"

// inputID is the key of the one input request of a round.
const inputID = "antler"

// roundExpiry is how long a suspended call waits for its client's retry:
// the upstream's request waits no longer (upstream.DefaultRelayTimeout).
const roundExpiry = upstream.DefaultRelayTimeout

// question is an upstream server request waiting for a client's answer.
type question struct {
	method string
	params json.RawMessage
	answer chan mcp.InputResponse // buffered: the asker may have given up
}

// outcome is the end of an upstream call.
type outcome struct {
	raw json.RawMessage
	err error
}

// suspended is a 2026-07-28 call between rounds, or in one.
type suspended struct {
	owner     any // the caller's principal
	tool      string
	questions chan question
	done      chan outcome // buffered
	cancel    context.CancelFunc
	relay     *roundRelay
	asked     *question   // the question of the last round
	expiry    *time.Timer // ends a call whose client never retries
}

// rounds holds the suspended calls by requestState, at most max per
// caller: each holds an upstream call and its slot for up to roundExpiry.
type rounds struct {
	max   int
	mu    sync.Mutex
	calls map[string]*suspended
	held  map[any]int // suspended calls by owner
}

// errTooManyRounds is the error result of a call that would pass the cap.
func (r *rounds) errTooManyRounds() *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf("too many calls waiting for input: this caller already has %d (answer or abandon one, or let it expire)", r.max))
}

// put suspends c under state, or reports false when its owner is at the cap.
func (r *rounds) put(state string, c *suspended) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls, r.held = map[string]*suspended{}, map[any]int{}
	}
	if r.held[c.owner] >= r.max {
		return false
	}
	r.held[c.owner]++
	r.calls[state] = c
	return true
}

// take removes and returns the call suspended under state if owner made
// it with tool (owner nil: whoever did); another caller's retry leaves it.
func (r *rounds) take(state string, owner any, tool string) *suspended {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls[state]
	if c == nil || owner != nil && (c.owner != owner || c.tool != tool) {
		return nil
	}
	delete(r.calls, state)
	if r.held[c.owner]--; r.held[c.owner] <= 0 {
		delete(r.held, c.owner)
	}
	return c
}

// isRetry reports whether req is a 2026-07-28 retry carrying a state the
// door minted: it resumes a suspended call rather than making one.
func isRetry(ctx context.Context, req mcp.CallToolRequest) bool {
	return server.IsModernRequest(ctx) && strings.HasPrefix(req.Params.RequestState, statePrefix)
}

// roundRelay is the relay of a suspended call: notifications go to the
// session of the current round, questions to the round's caller.
type roundRelay struct {
	srv       *Server
	mu        sync.Mutex
	current   context.Context
	questions chan<- question
}

var _ upstream.Relay = (*roundRelay)(nil)

func (r *roundRelay) round(ctx context.Context) {
	r.mu.Lock()
	r.current = ctx
	r.mu.Unlock()
}

func (r *roundRelay) Notify(method string, params json.RawMessage) {
	r.mu.Lock()
	ctx := r.current
	r.mu.Unlock()
	(&sessionRelay{srv: r.srv, call: ctx}).Notify(method, params)
}

func (r *roundRelay) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	r.mu.Lock()
	call := r.current
	r.mu.Unlock()
	feature, err := featureOf(method)
	if err != nil {
		return nil, err
	}
	// 2026-07-28 declares capabilities per request.
	info := server.RequestProtocolInfoFromContext(call)
	if info == nil || info.ClientCapabilities == nil || !clientDeclares(*info.ClientCapabilities, feature) {
		return nil, notSupported(feature)
	}
	q := question{method: method, params: params, answer: make(chan mcp.InputResponse, 1)}
	select {
	case r.questions <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-q.answer:
		b, err := json.Marshal(a)
		if err != nil || string(b) == "null" {
			return nil, &upstream.RPCError{Code: mcp.INVALID_PARAMS, Message: method + ": the client retried without an answer"}
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// relayed runs a tools/call's upstream part with a relay to its client:
// on a 2026-07-28 request in rounds (asked is then the result asking the
// client for input, when there is one), otherwise at once. release frees
// the call's slot: it runs when the upstream call ends, which for a
// suspended call may be long after this round answered (a retry has no
// slot of its own, and its release is never run).
func (s *Server) relayed(ctx context.Context, req mcp.CallToolRequest, release func(), run func(context.Context) (json.RawMessage, error)) (raw json.RawMessage, asked *mcp.CallToolResult, err error) {
	if !server.IsModernRequest(ctx) {
		defer release()
		raw, err = run(s.withRelay(ctx))
		return raw, nil, err
	}
	owner := ctx.Value(callerKey{}).(caller).p
	var c *suspended
	if isRetry(ctx, req) {
		c = s.rounds.take(req.Params.RequestState, owner, req.Params.Name)
		if c == nil {
			return nil, mcp.NewToolResultError("unknown or expired requestState: call the tool again"), nil
		}
		c.expiry.Stop()
		answer, ok := req.Params.InputResponses[inputID]
		if !ok {
			c.cancel()
			return nil, mcp.NewToolResultError("the retry carries no answer to the question asked: the call is abandoned"), nil
		}
		c.relay.round(ctx)
		c.asked.answer <- answer
	} else {
		questions := make(chan question)
		relay := &roundRelay{srv: s, current: ctx, questions: questions}
		// The upstream call outlives this round; the last round's end or
		// expiry cancels it.
		callCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &suspended{owner: owner, tool: req.Params.Name, questions: questions, done: make(chan outcome, 1), cancel: cancel, relay: relay}
		go func() {
			// The slot is free before the outcome is handed over, so the
			// caller's next call after the result finds it free.
			o := func() outcome {
				defer release()
				raw, err := run(upstream.WithRelay(callCtx, relay))
				return outcome{raw, err}
			}()
			c.done <- o
		}()
	}
	select {
	case o := <-c.done:
		c.cancel()
		return o.raw, nil, o.err
	case q := <-c.questions:
		res, ok := s.ask(c, q)
		if !ok {
			c.cancel()
		}
		return nil, res, nil
	case <-ctx.Done():
		c.cancel()
		return nil, nil, ctx.Err()
	}
}

// ask suspends c on q and returns the result that asks the client, or an
// error result (and false) for a question it cannot put.
func (s *Server) ask(c *suspended, q question) (*mcp.CallToolResult, bool) {
	b := server.NewInputRequestBuilder(statePrefix + newSessionID())
	switch q.method {
	case string(mcp.MethodSamplingCreateMessage):
		var p mcp.CreateMessageParams
		if err := json.Unmarshal(q.params, &p); err != nil {
			return mcp.NewToolResultError(invalidParams(q.method, err).Error()), false
		}
		b.Sample(inputID, p)
	case string(mcp.MethodElicitationCreate):
		var p mcp.ElicitationParams
		if err := json.Unmarshal(q.params, &p); err != nil {
			return mcp.NewToolResultError(invalidParams(q.method, err).Error()), false
		}
		b.Elicit(inputID, p)
	default:
		b.Roots(inputID)
	}
	res := b.ToolResult()
	c.asked = &q
	// An expired round cancels its upstream call, which frees its slot.
	c.expiry = time.AfterFunc(roundExpiry, func() {
		if s.rounds.take(res.RequestState, nil, "") != nil {
			c.cancel()
		}
	})
	if !s.rounds.put(res.RequestState, c) {
		c.expiry.Stop()
		return s.rounds.errTooManyRounds(), false
	}
	return res, true
}
