package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/config"
)

// Request sends any JSON-RPC request (resources/list, resources/read,
// prompts/get, completion/complete, logging/setLevel, ...) with params as
// written and returns the raw result. A JSON-RPC error from the server is an
// *RPCError; a dead connection wraps ErrConnectionClosed; the result is
// bounded by max_result_bytes. If ctx ends first, the server is told
// (notifications/cancelled over stdio; over HTTP the request's stream is
// closed) and ctx's error is returned.
//
// On a 2026-07-28 connection the request carries the protocol fields in its
// _meta (sampling and elicitation declared only with a Relay in ctx, the
// only requests that can answer them), and logging/setLevel, which that
// revision removed, sets the level every later request declares instead.
func (c *Conn) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	modern := mcp.IsModernProtocol(c.protocol)
	if modern && method == string(mcp.MethodSetLogLevel) {
		var p mcp.SetLevelParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &RPCError{Code: mcp.INVALID_PARAMS, Message: "logging/setLevel: " + err.Error()}
		}
		if err := c.client.SetLevel(ctx, mcp.SetLevelRequest{Params: p}); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		c.levelMu.Lock()
		c.level = string(p.Level)
		c.levelMu.Unlock()
		return json.RawMessage(`{}`), nil
	}
	if !modern && method == string(mcp.MethodSetLogLevel) {
		res, err := c.send(ctx, method, params, false)
		var p mcp.SetLevelParams
		if err == nil && json.Unmarshal(params, &p) == nil {
			c.levelMu.Lock()
			c.level = string(p.Level)
			c.levelMu.Unlock()
		}
		return res, err
	}
	if modern {
		p, err := c.withProtocolMeta(ctx, params, false)
		if err != nil {
			return nil, &RPCError{Code: mcp.INVALID_PARAMS, Message: method + ": " + err.Error()}
		}
		params = p
	}
	return c.send(ctx, method, params, modern)
}

// send sends a request whose params already carry the protocol _meta a
// 2026-07-28 connection needs (modern), and, over HTTP, the standard
// headers that revision derives from them.
func (c *Conn) send(ctx context.Context, method string, params json.RawMessage, modern bool) (json.RawMessage, error) {
	// mcp-go numbers its requests; a string id cannot collide with them.
	return c.sendID(ctx, "antler-"+strconv.FormatUint(c.requestSeq.Add(1), 10), method, params, modern)
}

// sendID is send with the request's id given; on stdio the request skips
// mcp-go's transport (rawstdio.go) unless its result is to be captured.
func (c *Conn) sendID(ctx context.Context, id string, method string, params json.RawMessage, modern bool) (json.RawMessage, error) {
	var body any
	if len(params) > 0 && string(params) != "null" {
		body = params
	}
	var header http.Header
	if modern && c.server.Type != config.TransportStdio { // (stdio has no headers to carry them)
		for k, v := range mcp.StandardHeaders(c.protocol, mcp.MCPMethod(method), params) {
			if header == nil {
				header = http.Header{}
			}
			header.Set(k, v)
		}
		if name, ok := taskHeaderName(method, params); ok {
			if header == nil {
				header = http.Header{}
			}
			header.Set(mcp.HeaderName, name)
		}
	}
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(id),
		Method:  method,
		Params:  body,
		Header:  header,
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var resp *transport.JSONRPCResponse
	var err error
	if _, capturing := ctx.Value(captureKey{}).(*capture); c.raw != nil && !capturing {
		resp, err = c.raw.send(ctx, c.results, c.relays, id, method, params)
	} else {
		resp, err = c.wire.SendRequest(ctx, req)
	}
	if err != nil {
		if err := ended(ctx, err); err != nil {
			c.cancelled(ctx, req.ID)
			return nil, err
		}
		return nil, classify(err)
	}
	if resp.Error != nil {
		return nil, &RPCError{Code: resp.Error.Code, Message: resp.Error.Message}
	}
	if resp.Result == nil {
		return nil, fmt.Errorf("%s: no result", method)
	}
	// resp.Result is already a copy of the server's bytes (json.RawMessage
	// copies when decoded) that only this request holds.
	return resp.Result, nil
}

// protocolMeta is what 2026-07-28 asks of every request's _meta that stays
// the same for a connection (protocol version, client capabilities, client
// identity), encoded once.
type protocolMeta struct {
	version, clientInfo json.RawMessage
	// capabilities are declared on a request made for a downstream client
	// (one with a Relay), which can answer the server's questions;
	// noCapabilities ({}) on any other: it could answer none (relay.go),
	// and each capability declared costs the server decoding per request.
	capabilities, noCapabilities json.RawMessage
}

// newProtocolMeta encodes c's fixed _meta fields once it has negotiated.
func (c *Conn) newProtocolMeta() (*protocolMeta, error) {
	m := protocolMeta{noCapabilities: json.RawMessage(`{}`)}
	var err error
	if m.version, err = json.Marshal(c.protocol); err != nil {
		return nil, err
	}
	if m.capabilities, err = json.Marshal(c.client.GetClientCapabilities()); err != nil {
		return nil, err
	}
	if m.clientInfo, err = json.Marshal(c.clientInfo); err != nil {
		return nil, err
	}
	return &m, nil
}

// addProtocolMeta sets, through set, what 2026-07-28 asks of every
// request's _meta: protocol version, client capabilities (those a request
// made with a Relay in ctx can answer), client identity, and the log level
// if one was set.
func (c *Conn) addProtocolMeta(ctx context.Context, set func(k string, v json.RawMessage)) error {
	set(mcp.MetaKeyProtocolVersion, c.meta.version)
	if relayFrom(ctx) != nil {
		set(mcp.MetaKeyClientCapabilities, c.meta.capabilities)
	} else {
		set(mcp.MetaKeyClientCapabilities, c.meta.noCapabilities)
	}
	set(mcp.MetaKeyClientInfo, c.meta.clientInfo)
	if level := c.logLevel(); level != "" {
		v, err := json.Marshal(level)
		if err != nil {
			return err
		}
		set(mcp.MetaKeyLogLevel, v)
	}
	return nil
}

// withProtocolMeta adds the protocol fields to params' _meta
// (addProtocolMeta); fields the caller set stay. Params without a _meta (the
// usual case) get it spliced in front of their own fields, written once per
// connection, log level and relay; valid says params need no check that
// they are JSON (they were just marshalled).
func (c *Conn) withProtocolMeta(ctx context.Context, params json.RawMessage, valid bool) (json.RawMessage, error) {
	if p, ok := c.spliceProtocolMeta(ctx, params, valid); ok {
		return p, nil
	}
	fields := map[string]json.RawMessage{}
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &fields); err != nil {
			return nil, fmt.Errorf("params must be an object: %w", err)
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := fields["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, fmt.Errorf("_meta must be an object: %w", err)
		}
	}
	err := c.addProtocolMeta(ctx, func(k string, v json.RawMessage) {
		if _, ok := meta[k]; !ok {
			meta[k] = v
		}
	})
	if err != nil {
		return nil, err
	}
	if fields["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}

// spliceProtocolMeta writes params with the protocol _meta as their first
// field, or reports false when it cannot tell that params are an object
// without one (mayHoldMeta, or anything but an object or null), which the
// decoding path then handles.
func (c *Conn) spliceProtocolMeta(ctx context.Context, params json.RawMessage, valid bool) (json.RawMessage, bool) {
	body := bytes.TrimLeft(params, " \t\r\n")
	empty := len(body) == 0 || string(bytes.TrimSpace(body)) == "null"
	if !empty && (body[0] != '{' || mayHoldMeta(body) || (!valid && !json.Valid(body))) {
		return nil, false
	}
	member, err := c.metaMember(ctx)
	if err != nil {
		return nil, false
	}
	if empty {
		body = []byte("{}")
	}
	rest := bytes.TrimLeft(body[1:], " \t\r\n")
	out := make([]byte, 0, 2+len(member)+len(rest))
	out = append(append(out, '{'), member...)
	if rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...), true
}

// mayHoldMeta reports whether params may have a _meta member: the name in
// any case (a Go server's struct decoding folds case), or any \u escape (a
// key can spell _meta with them, and a duplicate _meta after the spliced one
// is the one a server reads).
func mayHoldMeta(body []byte) bool {
	for i := bytes.IndexByte(body, '_'); i >= 0; {
		if len(body)-i > 4 && bytes.EqualFold(body[i+1:i+5], []byte("meta")) {
			return true
		}
		j := bytes.IndexByte(body[i+1:], '_')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return bytes.Contains(body, []byte(`\u`))
}

// metaMember is `"_meta":{...}` with the protocol fields for the current
// log level and for a request with or without a Relay, built on first use
// and again when the level changes.
func (c *Conn) metaMember(ctx context.Context) ([]byte, error) {
	relay := relayFrom(ctx) != nil
	c.levelMu.Lock()
	level, cached := c.level, &c.metaJSON[0]
	if relay {
		cached = &c.metaJSON[1]
	}
	ok := *cached != nil && c.metaLevel == level
	member := *cached
	c.levelMu.Unlock()
	if ok {
		return member, nil
	}
	meta := map[string]json.RawMessage{}
	if err := c.addProtocolMeta(ctx, func(k string, v json.RawMessage) { meta[k] = v }); err != nil {
		return nil, err
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	member = append([]byte(`"_meta":`), b...)
	c.levelMu.Lock()
	if c.level == level {
		if c.metaLevel != level {
			c.metaJSON = [2][]byte{}
			c.metaLevel = level
		}
		*cached = member
	}
	c.levelMu.Unlock()
	return member, nil
}

// withCallMeta is a tools/call's _meta on a 2026-07-28 connection: the
// caller's fields, and the protocol fields it did not set itself, without
// the decoding of encoded params that withProtocolMeta needs.
func (c *Conn) withCallMeta(ctx context.Context, meta map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(meta)+4)
	maps.Copy(out, meta)
	err := c.addProtocolMeta(ctx, func(k string, v json.RawMessage) {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	})
	return out, err
}

// callLogLevel makes the log level a tools/call declares in its _meta
// (io.modelcontextprotocol/logLevel, how 2026-07-28 sets it per request)
// the level of a connection on an earlier revision, which knows only
// logging/setLevel: on stdio it is sent first when the level differs from
// the one last set (a server that declares no logging is not asked). It
// returns the _meta without the key, which means nothing to such a server.
// The level then holds for the connection's later calls too, which on stdio
// are the same user's and thread's. A connection shared by users (HTTP,
// SSE) is not asked: its log messages reach no caller (relay.go), and
// callers at different levels would cost a request each.
func (c *Conn) callLogLevel(ctx context.Context, meta map[string]any) map[string]any {
	v, ok := meta[mcp.MetaKeyLogLevel]
	if !ok {
		return meta
	}
	var out map[string]any // nil when the level was the only key
	if len(meta) > 1 {
		out = maps.Clone(meta)
		delete(out, mcp.MetaKeyLogLevel)
	}
	level, ok := v.(string)
	if !ok {
		level = fmt.Sprint(v)
	}
	if c.relays.shared || !c.logging || level == c.logLevel() {
		return out
	}
	params, err := json.Marshal(mcp.SetLevelParams{Level: mcp.LoggingLevel(level)})
	if err == nil {
		_, err = c.Request(ctx, string(mcp.MethodSetLogLevel), params)
	}
	if err != nil {
		c.log.Debug("upstream refused the call's log level", "level", level, "error", err)
	}
	return out
}

// logLevel is the level last set with logging/setLevel (or, on a
// connection before 2026-07-28, a call's: callLogLevel), which a 2026-07-28
// connection declares on every request, as mcp-go does on its own.
func (c *Conn) logLevel() string {
	c.levelMu.Lock()
	defer c.levelMu.Unlock()
	return c.level
}

// cancelled tells a stdio server that a request whose ctx ended is
// abandoned, as mcp-go does for its own; over HTTP closing the request's
// stream is the cancellation.
func (c *Conn) cancelled(ctx context.Context, id mcp.RequestId) {
	if _, ok := c.wire.(transport.HTTPConnection); ok {
		return
	}
	reason := context.DeadlineExceeded.Error() // (ended saw the deadline pass)
	if ctx.Err() != nil {
		reason = ctx.Err().Error()
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}},
	}}
	go func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = c.wire.SendNotification(sctx, n)
	}()
}

// taskHeaderName is the Mcp-Name header of a request of the tasks
// extension (tasks/get, tasks/update, tasks/cancel): its params.taskId,
// encoded as the standard headers are, so intermediaries can route the
// request to the instance that holds the task. mcp-go derives Mcp-Name for
// tools/call, prompts/get and resources/read only.
func taskHeaderName(method string, params json.RawMessage) (string, bool) {
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return "", false
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TaskID == "" {
		return "", false
	}
	return mcp.EncodeHeaderValue(p.TaskID)
}

// TaskExtension is the identifier of the 2026-07-28 tasks extension, which
// a server declares under capabilities.extensions.
const TaskExtension = "io.modelcontextprotocol/tasks"

// ServesTaskExtension reports whether the connection speaks 2026-07-28 (or
// later) and the server declared the tasks extension
// (capabilities.extensions["io.modelcontextprotocol/tasks"]): any
// tools/call that declares the extension may then be answered with a task.
func (c *Conn) ServesTaskExtension() bool {
	if !mcp.IsModernProtocol(c.protocol) {
		return false
	}
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(c.capabilities, &caps) != nil {
		return false
	}
	v, ok := caps.Extensions[TaskExtension]
	return ok && string(v) != "null"
}

// Capabilities is the server's capabilities object as it sent it (from
// initialize, or server/discover on 2026-07-28); nil if it sent none.
func (c *Conn) Capabilities() json.RawMessage { return c.capabilities }

// ServesToolTasks reports whether the server declared 2025-11-25 task
// support for tools/call (capabilities.tasks.requests.tools.call).
func (c *Conn) ServesToolTasks() bool {
	var caps struct {
		Tasks *struct {
			Requests *struct {
				Tools *struct {
					Call json.RawMessage `json:"call"`
				} `json:"tools"`
			} `json:"requests"`
		} `json:"tasks"`
	}
	if json.Unmarshal(c.capabilities, &caps) != nil || caps.Tasks == nil || caps.Tasks.Requests == nil || caps.Tasks.Requests.Tools == nil {
		return false
	}
	call := caps.Tasks.Requests.Tools.Call
	return len(call) > 0 && string(call) != "null"
}

// SessionID is the streamable HTTP protocol session (Mcp-Session-Id) the
// connection's requests go on; "" for stdio, SSE and sessionless servers.
func (c *Conn) SessionID() string {
	if _, ok := c.wire.(transport.HTTPConnection); !ok || c.server.Type != config.TransportHTTP {
		return ""
	}
	return c.wire.GetSessionId()
}

// Instructions is the server's instructions text, if it gave one.
func (c *Conn) Instructions() string { return c.instructions }
