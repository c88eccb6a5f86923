package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
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
// _meta, and logging/setLevel, which that revision removed, sets the level
// every later request declares instead.
func (c *Conn) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return c.request(ctx, method, params, false)
}

// request is Request; valid says params are known to be valid JSON (they
// were just marshalled), which spares the protocol _meta a check.
func (c *Conn) request(ctx context.Context, method string, params json.RawMessage, valid bool) (json.RawMessage, error) {
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
	var body any
	var header http.Header
	if !modern && len(params) > 0 && string(params) != "null" {
		body = params // (boxed once: a modern request's are replaced below)
	}
	if modern {
		p, err := c.withProtocolMeta(params, valid)
		if err != nil {
			return nil, &RPCError{Code: mcp.INVALID_PARAMS, Message: method + ": " + err.Error()}
		}
		body = p
		// The standard headers travel on HTTP only: stdio has no headers,
		// and building them decodes the params again.
		if _, isHTTP := c.wire.(transport.HTTPConnection); isHTTP {
			for k, v := range mcp.StandardHeaders(c.protocol, mcp.MCPMethod(method), p) {
				if header == nil {
					header = http.Header{}
				}
				header.Set(k, v)
			}
		}
	}
	// mcp-go numbers its requests; a string id cannot collide with them.
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId("antler-" + strconv.FormatUint(c.requestSeq.Add(1), 10)),
		Method:  method,
		Params:  body,
		Header:  header,
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp, err := c.wire.SendRequest(ctx, req)
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

// withProtocolMeta adds what 2026-07-28 asks of every request's _meta
// (protocol version, client identity and capabilities, log level), as
// mcp-go does for its own requests; fields the caller set stay. Params
// without a _meta (the usual case) get it spliced in front of their own
// fields, written once per connection and log level; valid says params need
// no check that they are JSON.
func (c *Conn) withProtocolMeta(params json.RawMessage, valid bool) (json.RawMessage, error) {
	if p, ok := c.spliceProtocolMeta(params, valid); ok {
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
	c.addProtocolMeta(meta, c.logLevel())
	var err error
	if fields["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}

// addProtocolMeta sets the protocol fields of a request's _meta that meta
// does not hold already.
func (c *Conn) addProtocolMeta(meta map[string]json.RawMessage, level string) {
	set := func(k string, v any) {
		if _, ok := meta[k]; !ok {
			meta[k], _ = json.Marshal(v)
		}
	}
	set(mcp.MetaKeyProtocolVersion, c.protocol)
	set(mcp.MetaKeyClientCapabilities, c.client.GetClientCapabilities())
	set(mcp.MetaKeyClientInfo, c.clientInfo)
	if level != "" {
		set(mcp.MetaKeyLogLevel, level)
	}
}

// spliceProtocolMeta writes params with the protocol _meta as their first
// field, or reports false when it cannot tell that params are an object
// without one (the bytes "_meta" anywhere, or anything but an object or
// null), which the decoding path then handles.
func (c *Conn) spliceProtocolMeta(params json.RawMessage, valid bool) (json.RawMessage, bool) {
	body := bytes.TrimLeft(params, " \t\r\n")
	empty := len(body) == 0 || string(bytes.TrimSpace(body)) == "null"
	if !empty && (body[0] != '{' || bytes.Contains(body, []byte(`"_meta"`)) || (!valid && !json.Valid(body))) {
		return nil, false
	}
	member := c.metaMember()
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

// metaMember is `"_meta":{...}` with the protocol fields for the current
// log level, built on first use and again when the level changes.
func (c *Conn) metaMember() []byte {
	c.levelMu.Lock()
	defer c.levelMu.Unlock()
	if c.metaJSON == nil || c.metaLevel != c.level {
		meta := map[string]json.RawMessage{}
		c.addProtocolMeta(meta, c.level)
		b, _ := json.Marshal(meta) // (raw values that json.Marshal wrote)
		c.metaJSON, c.metaLevel = append([]byte(`"_meta":`), b...), c.level
	}
	return c.metaJSON
}

// logLevel is the level last set with logging/setLevel on a modern
// connection, which mcp-go declares on its own requests too.
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

// Capabilities is the server's capabilities object as it sent it (from
// initialize, or server/discover on 2026-07-28); nil if it sent none.
func (c *Conn) Capabilities() json.RawMessage { return c.capabilities }

// Instructions is the server's instructions text, if it gave one.
func (c *Conn) Instructions() string { return c.instructions }
