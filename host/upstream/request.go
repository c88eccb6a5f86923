package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/host/config"
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
	if len(params) > 0 && string(params) != "null" {
		body = params
	}
	var header http.Header
	if modern {
		p, err := c.withProtocolMeta(params)
		if err != nil {
			return nil, &RPCError{Code: mcp.INVALID_PARAMS, Message: method + ": " + err.Error()}
		}
		body = p
		for k, v := range mcp.StandardHeaders(c.protocol, mcp.MCPMethod(method), p) {
			if header == nil {
				header = http.Header{}
			}
			header.Set(k, v)
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
	return append(json.RawMessage(nil), resp.Result...), nil
}

// withProtocolMeta adds what 2026-07-28 asks of every request's _meta
// (protocol version, client identity and capabilities, log level), as
// mcp-go does for its own requests; fields the caller set stay.
func (c *Conn) withProtocolMeta(params json.RawMessage) (json.RawMessage, error) {
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
	set := func(k string, v any) {
		if _, ok := meta[k]; !ok {
			meta[k], _ = json.Marshal(v)
		}
	}
	set(mcp.MetaKeyProtocolVersion, c.protocol)
	set(mcp.MetaKeyClientCapabilities, c.client.GetClientCapabilities())
	set(mcp.MetaKeyClientInfo, c.clientInfo)
	if level := c.logLevel(); level != "" {
		set(mcp.MetaKeyLogLevel, level)
	}
	var err error
	if fields["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
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
