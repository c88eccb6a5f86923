package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/header"
	"github.com/antler-mcp/antler/internal/jsonscan"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/internal/upstream"
)

// A plain tools/call is answered by the door itself, in front of mcp-go's
// streamable handler: it reads only the call's id, name, arguments and
// _meta, checks the session as mcp-go would, makes the one call through the
// call path and writes the upstream's result bytes into one
// application/json response. mcp-go would decode the result into its types
// and encode it again, run a notification forwarder per request, and, once
// a session had any notification, answer every later call as a resumable
// SSE stream with an event-store write.
//
// A call takes this path only when nothing about it needs mcp-go's stream;
// anything else is left, body intact, for mcp-go:
//   - a task-augmented call, a submit or host tool, a tool mcp-go does not
//     serve (unknown, or with x-mcp-header parameters), malformed params;
//   - a progress token in _meta (progress streams before the result);
//   - a session whose client declared elicitation (mcp-go asks it on the
//     call's own stream, which only its path has; sampling and roots go on
//     the session's GET stream, which the door's call asks through as
//     mcp-go's would: relay.go), a 2026-07-28 call that declared any of the
//     three or a log level or carries a requestState (its rounds), a
//     2026-07-28 request mcp-go would refuse (header rules, unsupported
//     version);
//   - a session mcp-go has not registered and initialized, a version
//     header it refuses, notifications queued for the session (flush.go:
//     they go out on mcp-go's stream, before the result), and a session not
//     seen by mcp-go for a while (so its idle clock, which only mcp-go's
//     requests reset, is reset).
//
// A session-based call runs in its session's life (detach.go) and ends on
// the client's notifications/cancelled, as mcp-go's would. An upstream
// notification nobody asked for (a log message at the session's level)
// still reaches the client before the result: the response becomes an SSE
// stream at the first one, without event ids.

// touchSlack is the part of the session idle TTL a session may go without
// a request mcp-go saw before its calls take mcp-go's path again: mcp-go's
// idle sweeper knows only its own requests.
const touchSlack = 8

// callMessage is the part of a JSON-RPC message the door reads, its params
// decoded in the same pass (a message whose params are not an object fails
// to decode and is left to mcp-go, which reports it).
type callMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  callParams      `json:"params"`
	// params is the params member as written, when readCallMessage read
	// the message (nil otherwise).
	params json.RawMessage
}

// callParams are the params of a tools/call (and the requestId of a
// notifications/cancelled) the door reads.
type callParams struct {
	Name           string          `json:"name"`
	Arguments      json.RawMessage `json:"arguments"`
	Meta           *mcp.Meta       `json:"_meta"`
	Task           json.RawMessage `json:"task"`
	RequestState   json.RawMessage `json:"requestState"`
	InputResponses json.RawMessage `json:"inputResponses"`
	RequestID      json.RawMessage `json:"requestId"`
}

// readCallMessage reads msg from body, valid JSON, as written (jsonscan),
// as json.Unmarshal would for the messages it accepts: every member the
// door reads named once and exactly, its strings plain ASCII without
// escapes, params an object. It reports false, msg in any state, for any
// other message, which the caller decodes with encoding/json instead.
func readCallMessage(body []byte, msg *callMessage) bool {
	var seen readOnce
	return jsonscan.Members(body, func(key, value []byte) bool {
		switch string(key) {
		case "jsonrpc":
			return seen.first(1) && plainString(value, &msg.JSONRPC)
		case "id":
			msg.ID = json.RawMessage(value)
			return seen.first(2)
		case "method":
			return seen.first(4) && plainString(value, &msg.Method)
		case "params":
			msg.params = json.RawMessage(value)
			return seen.first(8) && value[0] == '{' && readCallParams(value, &msg.Params)
		}
		return !foldsTo(key, "jsonrpc", "id", "method", "params")
	})
}

// readOnce records which members of an object were read, so that a
// member named twice (encoding/json would take the last) is refused.
type readOnce uint16

// first reports whether the member numbered by bit is read for the first
// time, and records it.
func (r *readOnce) first(bit uint16) bool {
	if *r&readOnce(bit) != 0 {
		return false
	}
	*r |= readOnce(bit)
	return true
}

// readCallParams is readCallMessage for the params object.
func readCallParams(body []byte, p *callParams) bool {
	var seen readOnce
	return jsonscan.Members(body, func(key, value []byte) bool {
		switch string(key) {
		case "name":
			return seen.first(1) && plainString(value, &p.Name)
		case "arguments":
			p.Arguments = json.RawMessage(value)
			return seen.first(2)
		case "_meta":
			return seen.first(4) && json.Unmarshal(value, &p.Meta) == nil
		case "task":
			p.Task = json.RawMessage(value)
			return seen.first(8)
		case "requestState":
			p.RequestState = json.RawMessage(value)
			return seen.first(16)
		case "inputResponses":
			p.InputResponses = json.RawMessage(value)
			return seen.first(32)
		case "requestId":
			p.RequestID = json.RawMessage(value)
			return seen.first(64)
		}
		return !foldsTo(key, "name", "arguments", "_meta", "task", "requestState", "inputResponses", "requestId")
	})
}

// plainString sets *dst to value when it is a JSON string of printable
// ASCII without escapes (its text is then its value).
func plainString(value []byte, dst *string) bool {
	if len(value) < 2 || value[0] != '"' {
		return false
	}
	text := value[1 : len(value)-1]
	for _, c := range text {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return false
		}
	}
	switch string(text) { // the protocol's usual words are set without a copy
	case mcp.JSONRPC_VERSION:
		*dst = mcp.JSONRPC_VERSION
	case string(mcp.MethodToolsCall):
		*dst = string(mcp.MethodToolsCall)
	default:
		*dst = string(text)
	}
	return true
}

// callKey is a JSON-RPC id as the door keys its calls by (session.track).
func callKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

// plainID reports whether a JSON-RPC id is a string or an integer that
// mcp-go echoes as sent (it decodes ids into float64: a fraction, an
// exponent or more than 15 digits may come back written otherwise).
func plainID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) > 0 && id[0] == '"' {
		return true
	}
	digits := bytes.TrimPrefix(id, []byte("-"))
	if len(digits) == 0 || len(digits) > 15 || len(digits) > 1 && digits[0] == '0' {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// declaresServerRequests reports whether a client declared a capability
// the upstream could use to ask it something.
func declaresServerRequests(caps mcp.ClientCapabilities) bool {
	return caps.Sampling != nil || caps.Elicitation != nil || caps.Roots != nil
}

// serveCall answers a plain tools/call and reports whether it did; a POST
// it leaves is untouched (its body put back) for the task pre-handler and
// mcp-go. sess is the caller's session sessionID names (nil for none, or
// for a 2026-07-28 request, whose id is unchecked).
func (s *Server) serveCall(w http.ResponseWriter, r *http.Request, sessionID string, sess *session) bool {
	if r.Method != http.MethodPost || s.cache == nil {
		return false
	}
	if !header.IsJSON(r.Header.Get("Content-Type")) {
		return false
	}
	body, unread := unreadBody(r)
	if !unread {
		var err error
		body, err = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return false
		}
	}
	var msg callMessage
	if !jsonscan.Valid(body) {
		return false
	}
	if !readCallMessage(body, &msg) {
		msg = callMessage{} // (params nil: the members are read again below if needed)
		if json.Unmarshal(body, &msg) != nil {
			return false
		}
	}
	if msg.JSONRPC != mcp.JSONRPC_VERSION {
		return false
	}
	p := &msg.Params
	if msg.Method == string(mcp.MethodNotificationCancelled) {
		// Only the session's owner cancels its calls: a 2026-07-28 request
		// reaches here with any session id unchecked (that revision has no
		// sessions), so ownership is checked here too.
		if pr, ok := principal.FromContext(r.Context()); ok && sessionID != "" && len(p.RequestID) > 0 {
			if e := s.sessions.owned(sessionID, pr); e != nil {
				e.cancelled(callKey(p.RequestID))
			}
		}
		return false
	}
	if msg.Method != string(mcp.MethodToolsCall) || !plainID(msg.ID) || p.Name == "" ||
		!isNull(p.Task) || !isNull(p.RequestState) || !isNull(p.InputResponses) {
		return false
	}
	if args := bytes.TrimSpace(p.Arguments); len(args) > 0 && string(args) != "null" && args[0] != '{' {
		return false // mcp-go's path reports it
	}
	if p.Meta != nil && p.Meta.ProgressToken != nil {
		return false
	}
	versionHeader := r.Header.Get(mcp.HeaderProtocolVersion)
	version := p.Meta.ProtocolVersion()
	modern := mcp.IsModernProtocol(versionHeader) || mcp.IsModernProtocol(version)
	ctx := withCaller(r.Context(), r)
	var cs server.ClientSession
	if modern {
		if versionHeader != version || r.Header.Get(mcp.HeaderLastEventID) != "" || !s.streamable.SupportsProtocolVersion(version) || !mcp.IsValidProtocolVersion(version) {
			return false
		}
		caps := p.Meta.ClientCapabilities()
		if caps == nil || declaresServerRequests(*caps) || p.Meta.LogLevel() != "" {
			return false
		}
		params := msg.params
		if params == nil {
			var raw struct {
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(body, &raw) != nil {
				return false
			}
			params = raw.Params
		}
		if mcp.ValidateStandardHeaders(r.Header.Get, version, mcp.MethodToolsCall, bytes.TrimSpace(params)) != nil {
			return false
		}
	} else {
		if sess == nil || versionHeader != "" && !mcp.IsValidProtocolVersion(versionHeader) || !sess.fresh(s.ttl/touchSlack) {
			return false
		}
		client := sess.client.Load()
		if client == nil {
			return false
		}
		cs = *client
		info, isInfo := cs.(server.SessionWithClientInfo)
		if _, streamable := cs.(server.SessionWithStreamableHTTPConfig); !streamable || !isInfo || !cs.Initialized() ||
			sess.elicits(info) || len(cs.NotificationChannel()) > 0 {
			return false
		}
		ctx = s.mcp.WithContext(ctx, cs)
	}
	snap, ok := s.fastTool(ctx, p.Name)
	// A changed tool set has just queued notifications/tools/list_changed,
	// which mcp-go sends on the call's stream.
	if !ok || cs != nil && len(cs.NotificationChannel()) > 0 {
		return false
	}
	if cs != nil {
		if sess.life.Err() != nil {
			return false // ended since: mcp-go answers it
		}
		s.runSessionCall(bindToSession(ctx, sess.life), w, cs, sess, &msg, snap)
		return true
	}
	s.runCall(ctx, w, nil, &msg, snap, modern)
	return true
}

// runSessionCall is runCall for a call of a session-based revision, which
// notifications/cancelled of its session ends. (Apart from serveCall, whose
// many returns would keep its defers from being inlined.)
func (s *Server) runSessionCall(ctx context.Context, w http.ResponseWriter, cs server.ClientSession, sess *session, msg *callMessage, snap *toolcache.ToolSet) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	key := callKey(msg.ID)
	defer sess.untrack(key, sess.track(key, cancel))
	s.runCall(ctx, w, cs, msg, snap, false)
}

// runCall makes the call serveCall took and writes its answer.
func (s *Server) runCall(ctx context.Context, w http.ResponseWriter, cs server.ClientSession, msg *callMessage, snap *toolcache.ToolSet, modern bool) {
	p := &msg.Params
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.DebugContext(ctx, "MCP tools/call answered by the door", "tool", p.Name)
	}
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: p.Name, RawArguments: p.Arguments, Meta: p.Meta}}
	out := &fastStream{srv: s, ctx: ctx, w: w, session: cs, id: bytes.TrimSpace(msg.ID)}
	out.answer(s.fastCall(ctx, out, snap, req, modern), modern)
}

// unreadBody is r's body when the gateway's edge has read it whole and
// nothing has read it since (the edge's body has an Unread method): the door
// then reads those bytes in place, and leaves the body unread for mcp-go.
func unreadBody(r *http.Request) ([]byte, bool) {
	u, ok := r.Body.(interface{ Unread() ([]byte, bool) })
	if !ok {
		return nil, false
	}
	return u.Unread()
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// fastTool syncs the tool set, as mcp-go's BeforeCallTool hook does, and
// returns its snapshot when name is one of its plain tools.
func (s *Server) fastTool(ctx context.Context, name string) (*toolcache.ToolSet, bool) {
	snap, plain := s.syncToolSet(ctx)
	return snap, snap != nil && plain[name]
}

// fastAnswer is the end of a call the door answers: raw result bytes, a
// result to encode, or a JSON-RPC error.
type fastAnswer struct {
	raw json.RawMessage
	res *mcp.CallToolResult
	err *rpcError
}

// fastCall is callTool's path for a plain tool: the same identity, slot,
// call and error results, the upstream result kept as bytes.
func (s *Server) fastCall(ctx context.Context, out *fastStream, snap *toolcache.ToolSet, req mcp.CallToolRequest, modern bool) fastAnswer {
	call, err := s.identify(ctx, req)
	if err != nil {
		return fastAnswer{res: mcp.NewToolResultError(err.Error())}
	}
	name := req.Params.Name
	release := func() {}
	if s.calls != nil {
		var ok bool
		if release, ok = s.calls.Acquire(call.UserID); !ok {
			return fastAnswer{res: mcp.NewToolResultError("too many concurrent tool calls: this caller is at http.per_principal.max_concurrent_calls")}
		}
	}
	// (The door's session is out.session; a 2026-07-28 call has none.)
	meta := callMeta(req.Params.Meta, modern, out.session)
	raw, err := func() (json.RawMessage, error) {
		defer release()
		return invoke(upstream.WithRelay(ctx, out), snap, name, call, meta)
	}()
	if err != nil {
		var ce *dispatch.CallError
		switch {
		case errors.As(err, &ce):
			return fastAnswer{res: mcp.NewToolResultError(ce.Message)}
		case errors.Is(err, toolcache.ErrUnknownTool):
			return fastAnswer{res: mcp.NewToolResultError(fmt.Sprintf("unknown tool %q", truncate(name)))}
		}
		s.log.Error("MCP tool call failed", "tool", name, "error", dispatch.Redact(err.Error()))
		return fastAnswer{err: &rpcError{mcp.INTERNAL_ERROR, fmt.Sprintf("MCP tool '%s' failed", truncate(name))}}
	}
	if b, ok := s.passThrough(raw, modern); ok {
		return fastAnswer{raw: b}
	}
	res, err := mcp.ParseCallToolResult((*json.RawMessage)(&raw))
	if err != nil {
		s.log.Warn("MCP tool result not relayable", "tool", name, "error", err.Error())
		return fastAnswer{res: mcp.NewToolResultError(fmt.Sprintf("MCP tool '%s' returned a result this endpoint cannot relay", truncate(name)))}
	}
	res.ResultType, res.InputRequests, res.RequestState = "", nil, ""
	dropServerInfo(res)
	return fastAnswer{res: res}
}

// knownContent are the content types mcp-go relays.
var knownContent = map[string]bool{
	mcp.ContentTypeText: true, mcp.ContentTypeImage: true, mcp.ContentTypeAudio: true, mcp.ContentTypeLink: true,
	mcp.ContentTypeResource: true, mcp.ContentTypeToolUse: true, mcp.ContentTypeToolResult: true,
}

// knownBlocks reports whether content, a valid JSON array, holds only
// objects whose one "type" member is a plain string naming one of
// knownContent (an escaped name reads as unknown, which only costs the
// result the decoding path).
func knownBlocks(content []byte) bool {
	return jsonscan.Elements(content, func(block []byte) bool {
		known := 0
		return jsonscan.Members(block, func(key, value []byte) bool {
			switch {
			case string(key) == "type":
				known++
				return known == 1 && len(value) > 2 && value[0] == '"' && bytes.IndexByte(value, '\\') < 0 &&
					knownContent[string(value[1:len(value)-1])]
			case foldsTo(key, "type"):
				return false
			}
			return true
		}) && known == 1
	})
}

// foldsTo reports whether encoding/json could take key for one of names,
// which are ASCII: a key equal to one of them ignoring case, or any key
// outside ASCII (Unicode folding maps some letters, such as U+017F, to
// ASCII ones).
func foldsTo(key []byte, names ...string) bool {
	for _, c := range key {
		if c >= 0x80 {
			return true
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}

// passThrough is a result as the client gets it, without decoding it into
// mcp-go's types, when that is the same answer: content of known types, no
// input requests or request state, and a resultType, if any, of
// "complete". Without a resultType or _meta the upstream's bytes are the
// answer; otherwise only those two members are rewritten, as callTool
// does (the upstream's serverInfo dropped), the others' bytes kept. A
// 2026-07-28 result gets the resultType and serverInfo mcp-go would add.
func (s *Server) passThrough(raw json.RawMessage, modern bool) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' || !jsonscan.Valid(raw) {
		return nil, false
	}
	// The members are read as written, without decoding the result; a
	// member named twice, or one of these names in another case (which
	// encoding/json would also match), is left to the decoding path.
	var content, resultType []byte
	var meta bool
	var seen readOnce
	if !jsonscan.Members(raw, func(key, value []byte) bool {
		var bit uint16
		switch string(key) {
		case "content":
			bit, content = 1, value
		case "resultType":
			bit, resultType = 2, value
		case "_meta":
			bit, meta = 4, true
		case "inputRequests", "requestState":
			return false
		default:
			return !foldsTo(key, "content", "resultType", "_meta", "inputRequests", "requestState")
		}
		return seen.first(bit)
	}) || content == nil || content[0] != '[' ||
		resultType != nil && string(resultType) != `"`+string(mcp.ResultTypeComplete)+`"` ||
		!knownBlocks(content) {
		return nil, false
	}
	if resultType != nil || meta {
		return s.rewriteResult(raw, modern)
	}
	if !modern {
		return raw, true
	}
	// Content is there, so the object has a member for the comma.
	b := make([]byte, 0, len(s.modernPrefix)+len(raw))
	b = append(append(b, s.modernPrefix...), raw[1:]...)
	return b, true
}

// rewriteResult sets a result's resultType and _meta as mcp-go would
// answer them: 2026-07-28 gets resultType "complete" and Antler's
// serverInfo, an older revision neither; the upstream's serverInfo is
// dropped (dropServerInfo) and its other _meta keys kept.
func (s *Server) rewriteResult(raw json.RawMessage, modern bool) (json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil, false
	}
	delete(obj, "resultType")
	var meta map[string]json.RawMessage
	if m, ok := obj["_meta"]; ok && !isNull(m) {
		if json.Unmarshal(m, &meta) != nil || meta == nil {
			return nil, false // mcp-go's decoding reports it
		}
	}
	delete(meta, mcp.MetaKeyServerInfo)
	delete(obj, "_meta")
	if modern {
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		meta[mcp.MetaKeyServerInfo] = s.implementationJSON
		obj["resultType"] = json.RawMessage(`"` + string(mcp.ResultTypeComplete) + `"`)
	}
	if len(meta) > 0 {
		b, err := json.Marshal(meta)
		if err != nil {
			return nil, false
		}
		obj["_meta"] = b
	}
	b, err := json.Marshal(obj)
	return b, err == nil
}

// fastStream is the response of a call the door answers, and the call's
// upstream.Relay: a JSON body, or an SSE stream once the upstream sends a
// notification the client is to hear before the result.
type fastStream struct {
	srv     *Server
	ctx     context.Context
	w       http.ResponseWriter
	session server.ClientSession // nil: 2026-07-28
	id      json.RawMessage      // the call's JSON-RPC id, as sent

	mu   sync.Mutex
	sse  bool
	done bool
}

var _ upstream.Relay = (*fastStream)(nil)

// Notify writes a progress, log (at the session's level) or
// elicitation-complete notification on the call's stream; after the result
// it goes to the session as any late notification does.
func (f *fastStream) Notify(method string, params json.RawMessage) {
	if !forwardedNotifications[method] {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		(&sessionRelay{srv: f.srv, call: f.ctx}).Notify(method, params)
		return
	}
	fields, err := decodeObject(params)
	if err != nil {
		f.srv.log.Debug("upstream notification not relayable", "method", method, "error", err.Error())
		return
	}
	if method == string(mcp.MethodNotificationMessage) {
		ls, ok := f.session.(server.SessionWithLogging)
		lvl, _ := fields["level"].(string)
		if !ok || !mcp.LoggingLevel(lvl).ShouldSendTo(ls.GetLogLevel()) {
			return // 2026-07-28 without a declared level: none
		}
		fields = map[string]any{"level": mcp.LoggingLevel(lvl), "logger": fields["logger"], "data": fields["data"]}
		if fields["logger"] == nil {
			fields["logger"] = ""
		}
	}
	f.event(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method,
		Params: mcp.NotificationParams{AdditionalFields: fields}}})
}

// Request asks the session's client a sampling or roots request on its GET
// stream, as mcp-go's path does (sessionRelay); anything else is answered at
// once: a 2026-07-28 client declared nothing it could be asked, and a
// session whose client declared elicitation takes mcp-go's path
// (serveCall's conditions).
func (f *fastStream) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	feature, err := featureOf(method)
	if err != nil {
		return nil, err
	}
	switch {
	case f.session == nil:
		return nil, &upstream.RPCError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf(
			"the MCP client of this request uses protocol %s, which has no server requests (%s goes in the call's result)",
			mcp.ProtocolVersion20260728, method)}
	case feature == "elicitation":
		return nil, notSupported(feature)
	}
	return (&sessionRelay{srv: f.srv, call: f.ctx}).Request(ctx, method, params)
}

// event writes one SSE event, upgrading the response at the first; the
// caller holds mu.
func (f *fastStream) event(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	f.sseEvent(b)
}

func (f *fastStream) sseEvent(b []byte) {
	if !f.sse {
		f.sse = true
		h := f.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		h.Set("Cache-Control", "no-cache")
		f.w.WriteHeader(http.StatusOK)
	}
	buf := make([]byte, 0, len(b)+32)
	buf = append(append(append(buf, "event: message\ndata: "...), b...), "\n\n"...)
	_, _ = f.w.Write(buf)
	_ = http.NewResponseController(f.w).Flush()
}

// jsonContent is the Content-Type of a JSON answer, one slice for all of
// them (a header value is only ever replaced or appended to, never written
// in place).
var jsonContent = []string{"application/json"}

// answer writes the call's response: the JSON-RPC envelope around a's
// result bytes, as application/json (or the stream's last event).
func (f *fastStream) answer(a fastAnswer, modern bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = true
	var b []byte
	switch {
	case a.err != nil:
		e, _ := json.Marshal(mcp.JSONRPCErrorDetails{Code: a.err.code, Message: a.err.msg})
		b = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`, f.id, e)
	default:
		raw := a.raw
		if raw == nil {
			if modern {
				a.res.ResultType = mcp.ResultTypeComplete
				if meta := a.res.EnsureResultMeta(); meta.ServerInfo() == nil {
					meta.SetServerInfo(f.srv.implementation)
				}
			}
			var err error
			if raw, err = json.Marshal(a.res); err != nil {
				raw = []byte(`{"content":[],"isError":true}`)
			}
		}
		b = make([]byte, 0, len(raw)+len(f.id)+48) // room for the newline
		b = append(append(append(append(append(b, `{"jsonrpc":"2.0","id":`...), f.id...), `,"result":`...), raw...), '}')
	}
	if f.sse {
		f.sseEvent(b)
		return
	}
	f.w.Header()["Content-Type"] = jsonContent
	f.w.WriteHeader(http.StatusOK)
	_, _ = f.w.Write(append(b, '\n'))
}
