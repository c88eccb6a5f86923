// Package dispatch is the one path a request takes from a door to an
// upstream server once its target is known: the interceptor chain, the
// transport (the shared HTTP or SSE connection, or the caller's pooled stdio
// session leased in its thread's workspace), the translation of host paths in
// results, the result bound and the mapping of every failure to a
// model-safe *CallError.
//
// The doors (the REST API, the MCP endpoint, durable task drivers) build a
// Request; the tool cache resolves its target (internal/toolcache) and hands it
// to an Endpoint. Nothing else reaches an upstream server.
package dispatch

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/antler-mcp/antler/internal/upstream"
)

// MethodCallTool is the method of a tool call, the Request whose Method is
// empty.
const MethodCallTool = "tools/call"

// Doors a request comes through, as metrics and traces label them.
const (
	DoorREST = "rest"
	DoorMCP  = "mcp"
	// DoorTask is a durable task's own call (a poll, a cancel, an answer).
	DoorTask = "task"
)

// Request is one request from a door to an upstream server, the only type a
// door builds. A tool call sets Name (and Arguments); any other method sets
// Method and Params.
type Request struct {
	// Name is the tool's exposed name (tools/call only).
	Name      string
	Arguments json.RawMessage
	// UserID is the caller the request acts for (the authenticated
	// principal, or the user an internal principal named); ThreadID its
	// thread. Both pick the stdio session and its workspace.
	UserID   string
	ThreadID string
	// Secrets are the request's per-request credential values
	// (headers_from_context). Never log them.
	Secrets map[string]string
	// Meta is the downstream request's _meta (a progressToken, say),
	// forwarded upstream. Its "headers" key is never forwarded: on stdio
	// that key carries the headers the chain set, and a caller must not
	// forge them.
	Meta map[string]any
	// Method is the MCP method; "" means tools/call. Params are its raw
	// params for any other method (resources/read, prompts/get, ...).
	Method string
	Params json.RawMessage
	// Task is params.task of a 2025-11-25 task-augmented tools/call
	// ({"ttl": ms} or {}); nil for a plain call.
	Task json.RawMessage
	// Session is the streamable HTTP protocol session (Mcp-Session-Id) the
	// request must go on, a durable task's; "" means the shared
	// connection's. Ignored for stdio and SSE.
	Session string
	// Door is where the request came in (DoorREST, DoorMCP or DoorTask),
	// for the metrics and traces; "" counts as "other".
	Door string
	// OnSession, when set, is told the streamable HTTP session the request
	// went on ("" for stdio, SSE and sessionless servers) once it has been
	// answered, so a task can be kept with it.
	OnSession func(session string)
	// LiveOnly sends the request only on a connection that is open now:
	// the user's thread's live stdio process, or the shared connection
	// already dialled. None is started or dialled for it; without one the
	// request fails with ErrNotLive. It is for requests that only matter
	// to the process that is there (ending a subscription it holds).
	LiveOnly bool
}

// ErrNotLive is wrapped by the failure of a LiveOnly request that found no
// open connection.
var ErrNotLive = errors.New("no open connection to the server")

// method is the request's MCP method.
func (r Request) method() string {
	if r.Method == "" {
		return MethodCallTool
	}
	return r.Method
}

// Op is a non-tool operation run on a server's connection by Endpoint.Send,
// after the credential layers set the request's headers: on HTTP and SSE
// they travel in ctx (upstream.WithCallHeaders), so an Op must send with the
// ctx it is given.
type Op func(ctx context.Context, conn *upstream.Conn) (json.RawMessage, error)

// metaHeaders is the _meta key that carries a stdio request's headers.
const metaHeaders = "headers"

// wireMeta is the _meta a request carries upstream: the downstream's own,
// without "headers", plus, for stdio, the headers the chain set. When that
// is downstream as it stands (the usual case), it is downstream itself, not
// a copy: the transports only read a request's _meta.
func wireMeta(downstream map[string]any, stdio bool, headers map[string]string) map[string]any {
	_, forged := downstream[metaHeaders]
	add := stdio && len(headers) > 0
	if !forged && !add {
		if len(downstream) == 0 {
			return nil // (none, the usual case on REST, is no map)
		}
		return downstream
	}
	meta := make(map[string]any, len(downstream)+1)
	for k, v := range downstream {
		if k != metaHeaders {
			meta[k] = v
		}
	}
	if add {
		meta[metaHeaders] = headers
	}
	if len(meta) == 0 {
		return nil
	}
	return meta
}

// withMeta returns params with meta as its _meta, merged over any _meta the
// params already hold (meta wins; their "headers" key is dropped). Params
// that are not a JSON object are returned unchanged.
func withMeta(params json.RawMessage, meta map[string]any) json.RawMessage {
	obj := map[string]json.RawMessage{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
			return params
		}
	}
	if _, ok := obj["_meta"]; !ok && len(meta) == 0 {
		return params
	}
	merged := map[string]any{}
	if raw, ok := obj["_meta"]; ok {
		var m map[string]any
		if json.Unmarshal(raw, &m) == nil {
			for k, v := range m {
				if k != metaHeaders {
					merged[k] = v
				}
			}
		}
	}
	for k, v := range meta {
		merged[k] = v
	}
	b, err := json.Marshal(merged)
	if err != nil {
		return params
	}
	obj["_meta"] = b
	out, err := json.Marshal(obj)
	if err != nil {
		return params
	}
	return out
}
