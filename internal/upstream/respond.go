package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/config"
)

// A server request answered later. A durable task's elicitation/create
// waits for a user who may answer in an hour, from another process, after
// a host restart: the Relay that receives it records it (its id from
// ServerRequestID) and returns an error wrapping ErrRespondLater, so no
// response is sent and the request stays pending at the server. Respond
// answers it later, on the connection it came on or, over streamable HTTP,
// on any connection to the same protocol session (the server matches a
// response to its request by id within the session). How long the request
// stays answerable is the server's to say: one that gave up ignores the
// response.

// ErrRespondLater is wrapped by a Relay's Request error to send no response
// to the server request now: it is answered with Conn.Respond.
var ErrRespondLater = errors.New("the server request is answered later")

// ErrCannotRespond is wrapped by Respond on a transport that cannot carry a
// response outside the exchange that received the request (legacy SSE).
var ErrCannotRespond = errors.New("this transport cannot answer a server request later")

// maxRespondBody bounds what Respond reads of the server's reply to its
// POST (the reply carries nothing Respond uses).
const maxRespondBody = 64 << 10

type serverRequestIDKey struct{}

// ServerRequestID is the JSON-RPC id of the server request a Relay's
// Request is asked, as the server wrote it; false outside one.
func ServerRequestID(ctx context.Context) (json.RawMessage, bool) {
	id, ok := ctx.Value(serverRequestIDKey{}).(json.RawMessage)
	return id, ok
}

func withServerRequestID(ctx context.Context, id mcp.RequestId) context.Context {
	b, err := json.Marshal(id)
	if err != nil {
		return ctx
	}
	return context.WithValue(ctx, serverRequestIDKey{}, json.RawMessage(b))
}

// Respond answers the server request id (as ServerRequestID gave it) with
// result, a JSON object: over stdio on the child's stdin, over streamable
// HTTP with a POST on the connection's protocol session, with the headers
// of ctx's call (WithCallHeaders) or the base ones. The server's taking the
// POST (200 or 202) is success; a session the server no longer has (404)
// wraps ErrConnectionClosed. Legacy SSE wraps ErrCannotRespond.
func (c *Conn) Respond(ctx context.Context, id, result json.RawMessage) error {
	if !json.Valid(id) || !json.Valid(result) {
		return fmt.Errorf("respond: the id and the result must be JSON")
	}
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}{mcp.JSONRPC_VERSION, id, result})
	if err != nil {
		return fmt.Errorf("respond: %w", err)
	}
	switch c.server.Type {
	case config.TransportStdio:
		if c.requests == nil {
			return fmt.Errorf("respond: %w", ErrConnectionClosed)
		}
		if err := c.requests.send(ctx, body); err != nil {
			return fmt.Errorf("respond: %w: %w", ErrConnectionClosed, err)
		}
		return nil
	case config.TransportHTTP:
		return c.respondHTTP(ctx, body)
	}
	return fmt.Errorf("respond over %s: %w", c.server.Type, ErrCannotRespond)
}

// replyKey marks the context of a response's POST: the event stream a
// server may answer it with is not held back by the request gate, which
// waits for that POST.
type replyKey struct{}

// replyHTTP is the request gate's sender over streamable HTTP: the reply to
// a server request, POSTed within replyWriteTimeout of the handler's end
// (however long a relayed request waited for its client).
func (c *Conn) replyHTTP(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), replyWriteTimeout)
	defer cancel()
	return c.respondHTTP(ctx, body)
}

// respondHTTP POSTs a response on the connection's protocol session.
func (c *Conn) respondHTTP(ctx context.Context, body []byte) error {
	ctx = context.WithValue(ctx, replyKey{}, true)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.server.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("respond: %w", err)
	}
	for k, v := range c.headerFunc(ctx) {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s := c.SessionID(); s != "" {
		req.Header.Set(mcp.HeaderSessionID, s)
	}
	if c.protocol != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, c.protocol)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("respond: %w: %w", ErrConnectionClosed, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxRespondBody))
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted:
		return nil
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("respond: the server no longer has the protocol session (HTTP 404): %w", ErrConnectionClosed)
	}
	return fmt.Errorf("respond: the server refused the response with HTTP %d", resp.StatusCode)
}
