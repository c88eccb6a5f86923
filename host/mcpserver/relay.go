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

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/host/upstream"
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
//   - 2026-07-28 removed server requests for multi round-trip results,
//     which would have to suspend the upstream call across the client's
//     retries: a relayed request from a call of such a client is refused.

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

	feature, err := r.askable(method)
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
func (r *sessionRelay) askable(method string) (string, error) {
	var feature string
	switch method {
	case string(mcp.MethodSamplingCreateMessage):
		feature = "sampling"
	case string(mcp.MethodElicitationCreate):
		feature = "elicitation"
	case string(mcp.MethodListRoots):
		feature = "roots"
	default:
		return "", &upstream.RPCError{Code: mcp.METHOD_NOT_FOUND, Message: method + ": not relayed to MCP clients"}
	}
	if server.IsModernRequest(r.call) {
		return feature, &upstream.RPCError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf(
			"the MCP client of this request uses protocol %s, which has no server requests: Antler does not yet relay %s to it",
			mcp.ProtocolVersion20260728, method)}
	}
	cs := server.ClientSessionFromContext(r.call)
	info, ok := cs.(server.SessionWithClientInfo)
	if cs == nil || !ok {
		return feature, notSupported(feature)
	}
	caps := info.GetClientCapabilities()
	declared := map[string]bool{"sampling": caps.Sampling != nil, "elicitation": caps.Elicitation != nil, "roots": caps.Roots != nil}
	if !declared[feature] {
		return feature, notSupported(feature)
	}
	if _, streamable := cs.(server.SessionWithStreamableHTTPConfig); streamable && feature != "elicitation" && !r.srv.listeners.open(cs.SessionID()) {
		return feature, &upstream.RPCError{Code: mcp.INTERNAL_ERROR, Message: fmt.Sprintf(
			"the MCP client of this session has no GET stream open on /mcp, the only stream %s requests reach it on", method)}
	}
	return feature, nil
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
func upstreamMeta(ctx context.Context, m *mcp.Meta) map[string]any {
	out := map[string]any{}
	if m != nil {
		for k, v := range m.AdditionalFields {
			switch {
			case strings.HasPrefix(k, "antler/"),
				k == mcp.MetaKeyProtocolVersion, k == mcp.MetaKeyClientInfo, k == mcp.MetaKeyClientCapabilities:
				continue
			}
			out[k] = v
		}
		if m.ProgressToken != nil {
			out["progressToken"] = m.ProgressToken
		}
	}
	if _, ok := out[mcp.MetaKeyLogLevel]; !ok && !server.IsModernRequest(ctx) {
		if ls, ok := server.ClientSessionFromContext(ctx).(server.SessionWithLogging); ok {
			out[mcp.MetaKeyLogLevel] = string(ls.GetLogLevel())
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// listeners counts the GET streams open on each streamable-HTTP session:
// mcp-go sends sampling and roots requests only there.
type listeners struct {
	mu sync.Mutex
	n  map[string]int
}

// opened records a GET stream of session id and returns the function that
// records its end.
func (l *listeners) opened(id string) func() {
	l.mu.Lock()
	if l.n == nil {
		l.n = map[string]int{}
	}
	l.n[id]++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.n[id]--; l.n[id] <= 0 {
			delete(l.n, id)
		}
	}
}

func (l *listeners) open(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[id] > 0
}
