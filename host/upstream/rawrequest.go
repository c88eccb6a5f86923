package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// rawIDs numbers the requests Request sends. Their ids are strings
// ("antler-raw-N"), which can never equal the numeric ids mcp-go gives its
// own requests on the same connection.
var rawIDs atomic.Int64

// rawCancelTimeout bounds the notifications/cancelled sent for a request
// whose context ended, as mcp-go does for its own.
const rawCancelTimeout = 5 * time.Second

// Request sends one JSON-RPC request (resources/read, prompts/get, ...) with
// params as given and returns the raw result. It goes through the same
// transport, result cap (max_result_bytes) and headers (WithCallHeaders) as
// CallTool, and does the protocol work mcp-go's client does for its own
// requests: on a 2026-07-28 connection the per-request _meta (protocol
// version, client capabilities) and the Mcp-Method and Mcp-Name headers,
// and on stdio a notifications/cancelled when ctx ends first. A JSON-RPC
// error from the server is an *RPCError and a dead connection wraps
// ErrConnectionClosed.
func (c *Conn) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	modern := mcp.IsModernProtocol(c.protocol)
	if modern {
		var err error
		if params, err = c.protocolMeta(params); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
	}
	req := transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(fmt.Sprintf("antler-raw-%d", rawIDs.Add(1))),
		Method:  method,
	}
	if len(params) > 0 {
		req.Params = params
	}
	if standard := mcp.StandardHeaders(c.protocol, mcp.MCPMethod(method), params); len(standard) > 0 {
		req.Header = make(http.Header, len(standard))
		for k, v := range standard {
			req.Header.Set(k, v)
		}
	}
	t := c.client.GetTransport()
	resp, err := t.SendRequest(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			c.cancelRaw(ctx, t, req.ID)
			return nil, ctx.Err()
		}
		// As in CallTool: a transport timer can fire a moment before ctx is
		// marked done.
		if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
			return nil, fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return nil, classify(err)
	}
	if resp == nil {
		return nil, fmt.Errorf("%s: no response", method)
	}
	if resp.Error != nil {
		return nil, &RPCError{Code: resp.Error.Code, Message: resp.Error.Message}
	}
	if len(resp.Result) == 0 {
		return nil, fmt.Errorf("%s: empty result", method)
	}
	return resp.Result, nil
}

// protocolMeta adds to params' _meta what a 2026-07-28 request must carry
// (there is no initialize handshake to fix it once).
func (c *Conn) protocolMeta(params json.RawMessage) (json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &fields); err != nil || fields == nil {
			return nil, fmt.Errorf("params must be a JSON object: %w", err)
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := fields["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
	}
	var err error
	if meta[mcp.MetaKeyProtocolVersion], err = json.Marshal(c.protocol); err != nil {
		return nil, err
	}
	if meta[mcp.MetaKeyClientCapabilities], err = json.Marshal(c.client.GetClientCapabilities()); err != nil {
		return nil, err
	}
	if fields["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}

// cancelRaw tells a stdio server to stop a request whose context ended;
// over HTTP ending the request's stream is the cancellation. Best effort
// and off the caller's path.
func (c *Conn) cancelRaw(ctx context.Context, t transport.Interface, id mcp.RequestId) {
	if _, ok := t.(transport.HTTPConnection); ok {
		return
	}
	n := mcp.JSONRPCNotification{
		JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{
				AdditionalFields: map[string]any{"requestId": id, "reason": ctx.Err().Error()},
			},
		},
	}
	go func() {
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rawCancelTimeout)
		defer cancel()
		_ = t.SendNotification(nctx, n)
	}()
}
