package taskservice

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/task/spectasks"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/internal/upstream"
)

// CacheCaller calls task tools through the tool cache: the same upstream
// connections, stdio sessions and credential chain as agents' calls, by the
// tools' raw names (agents never see status and cancel tools).
type CacheCaller struct {
	Cache *toolcache.Cache
	// Frozen is the task configuration taken at startup (nil: no check).
	// A snapshot whose task-enabled servers or interceptors differ from it
	// is refused with a *DriftError, so background calls never run against
	// a configuration their tasks were not submitted under.
	Frozen *config.TaskFreeze
}

// DriftError reports task-enabled configuration that changed after startup.
type DriftError struct{ Names []string }

func (e *DriftError) Error() string {
	return "MCP task-enabled server configuration changed after Antler started (" + strings.Join(e.Names, ", ") +
		"); restart Antler before using durable task tools"
}

var _ ordinary.ToolCaller = CacheCaller{}

// CallTool implements ordinary.ToolCaller.
func (c CacheCaller) CallTool(ctx context.Context, call ordinary.ToolCall) (json.RawMessage, error) {
	snap, err := c.Cache.ToolSet(ctx)
	if err != nil {
		return nil, err
	}
	if c.Frozen != nil {
		if names := c.Frozen.Drift(snap.TaskFreeze); len(names) > 0 {
			return nil, &DriftError{Names: names}
		}
	}
	secrets := call.Secrets
	if !call.RequestScopedHeaders {
		secrets = nil // background calls never carry per-request credentials
	}
	return snap.CallServerTool(ctx, call.Server, call.Tool, dispatch.Request{
		Arguments: call.Arguments, UserID: call.UserID, ThreadID: call.ThreadID, Secrets: secrets, Door: dispatch.DoorTask,
	}, call.RequestScopedHeaders)
}

// SpecCaller sends the spec task drivers' requests (2025-11-25 and the
// 2026-07-28 extension) through the tool
// cache: the task-augmented tools/call through the tool call chain (the
// same interceptors as an agent's call), tasks/* through the credential
// layers, each on the owner's stdio session or on the task's streamable
// HTTP session.
type SpecCaller struct {
	Cache *toolcache.Cache
}

var _ spectasks.Caller = SpecCaller{}

// Call implements spectasks.Caller.
func (c SpecCaller) Call(ctx context.Context, call spectasks.Call) (spectasks.Reply, error) {
	snap, err := c.Cache.ToolSet(ctx)
	if err != nil {
		return spectasks.Reply{}, err
	}
	var session string
	req := dispatch.Request{
		UserID: call.UserID, ThreadID: call.ThreadID, Session: call.Session, Door: dispatch.DoorTask,
		OnSession: func(s string) { session = s },
	}
	if call.Hold != nil {
		ctx = upstream.WithRelay(ctx, holdRelay{hold: call.Hold})
	}
	var raw json.RawMessage
	switch call.Method {
	case spectasks.MethodRespond:
		raw, err = snap.Send(ctx, call.Server, req, func(ctx context.Context, conn *upstream.Conn) (json.RawMessage, error) {
			return json.RawMessage(`{}`), conn.Respond(ctx, call.RequestID, call.Result)
		})
	case spectasks.MethodCallTool:
		req.Arguments, req.Task, req.Meta = call.Arguments, call.Task, call.Meta
		if call.RequestScoped {
			req.Secrets = call.Secrets
		}
		raw, err = snap.CallServerTool(ctx, call.Server, call.Tool, req, call.RequestScoped)
	default:
		req.Method, req.Params = call.Method, call.Params
		raw, err = snap.Send(ctx, call.Server, req, nil)
	}
	if err != nil {
		return spectasks.Reply{}, specError(err)
	}
	return spectasks.Reply{Result: raw, Session: session}, nil
}

// specError keeps err's text and chain and adds what the driver reads: the
// server's JSON-RPC error and a forgotten task session.
func specError(err error) error {
	var rpc *upstream.RPCError
	if errors.As(err, &rpc) {
		return &wrapped{err: err, also: &spectasks.RPCError{Code: rpc.Code, Message: rpc.Message}}
	}
	if errors.Is(err, dispatch.ErrSessionGone) {
		return &wrapped{err: err, also: spectasks.ErrSessionGone}
	}
	return err
}

// wrapped is err that also matches also (errors.Is and errors.As).
type wrapped struct{ err, also error }

func (w *wrapped) Error() string   { return w.err.Error() }
func (w *wrapped) Unwrap() []error { return []error{w.err, w.also} }

// holdRelay takes the server requests that arrive on a spec task
// request's stream: the ones the driver holds get no response now
// (upstream.ErrRespondLater), the others are refused.
type holdRelay struct {
	hold func(spectasks.ServerRequest) bool
}

func (holdRelay) Notify(string, json.RawMessage) {}

func (r holdRelay) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if id, ok := upstream.ServerRequestID(ctx); ok && r.hold(spectasks.ServerRequest{ID: id, Method: method, Params: params}) {
		return nil, fmt.Errorf("%s held for the task's answer: %w", method, upstream.ErrRespondLater)
	}
	return nil, &upstream.RPCError{Code: -32601, Message: method + ": Antler's background task poller cannot answer this request"}
}
