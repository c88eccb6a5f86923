// Package interceptor is the tool-call chain: every call to an upstream tool
// passes through an ordered list of interceptors that may change its headers
// and arguments or deny it, and then reaches the transport. Built-in
// credential layers and plugins implement the same interface. internal/dispatch
// builds each Request from the door's dispatch.Request; requests other than
// tools/call pass through the built-in credential layers only.
//
// Order is DeerFlow's: the first interceptor is the outermost, so a later one
// runs closer to the transport and its header writes win:
// static headers < OAuth < user_auth < custom plugins < headers_from_context.
package interceptor

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/header"
)

// Request is one tool call (or, for the credential layers, another MCP
// request, with Tool, ExposedName and Arguments empty) on its way to an
// upstream server.
type Request struct {
	// Server is the server the tool was discovered from.
	Server *config.Server
	// Tool is the upstream's own tool name; ExposedName is the agent's.
	Tool        string
	ExposedName string
	Arguments   json.RawMessage
	// Headers are the headers the call will carry. For HTTP and SSE servers
	// they start as the server's static headers; for stdio they start empty
	// and, if any are set, travel as the call's _meta.headers.
	Headers map[string]string
	// UserID is the caller the call acts for (the authenticated principal,
	// or the user an internal principal named); ThreadID its thread.
	UserID   string
	ThreadID string
	// Secrets are the call's per-request credential values. Never log them.
	Secrets map[string]string
}

// SetHeaders writes headers through the case-insensitive override, landing
// on the spelling the server's static headers use.
func (r *Request) SetHeaders(overrides ...header.Override) {
	r.Headers = header.Apply(r.Headers, overrides, header.Spellings(staticNames(r.Server)))
}

func staticNames(s *config.Server) []string {
	if s == nil {
		return nil
	}
	names := make([]string, len(s.Headers))
	for i, h := range s.Headers {
		names[i] = h.Key
	}
	return names
}

// Handler sends a request on (to the next interceptor or the transport) and
// returns the raw CallToolResult.
type Handler func(ctx context.Context, req *Request) (json.RawMessage, error)

// Interceptor is one layer of the chain. It may change req and call next, or
// return without calling next (a denial).
type Interceptor interface {
	Intercept(ctx context.Context, req *Request, next Handler) (json.RawMessage, error)
}

// Named is an interceptor that names itself ("oauth", "user_auth", a
// plugin's entry name), for the span of its turn in the chain.
type Named interface {
	Name() string
}

// NameOf is ic's name for a trace: its Name when it is Named, else
// "interceptor".
func NameOf(ic Interceptor) string {
	if n, ok := ic.(Named); ok {
		return n.Name()
	}
	return "interceptor"
}

// Func adapts a function to Interceptor.
type Func func(ctx context.Context, req *Request, next Handler) (json.RawMessage, error)

// Intercept calls f.
func (f Func) Intercept(ctx context.Context, req *Request, next Handler) (json.RawMessage, error) {
	return f(ctx, req, next)
}

var _ Interceptor = Func(nil)

// Chain composes interceptors around base, the first outermost.
func Chain(base Handler, chain ...Interceptor) Handler {
	h := base
	for i := len(chain) - 1; i >= 0; i-- {
		ic, next := chain[i], h
		h = func(ctx context.Context, req *Request) (json.RawMessage, error) {
			return ic.Intercept(ctx, req, next)
		}
	}
	return h
}

// Denied is a call an interceptor refused. Message is shown to the model as
// the tool's error, so it must never contain a credential.
type Denied struct {
	Message string
	// By names the layer that refused: DeniedByCredential, DeniedByPlugin
	// ("" when the interceptor did not say), for the audit log.
	By string
}

// Layers that deny calls.
const (
	DeniedByCredential = "credential"
	DeniedByPlugin     = "plugin"
)

func (e *Denied) Error() string { return e.Message }

// Deny returns a *Denied error.
func Deny(message string) error { return &Denied{Message: message} }

// DenyBy returns a *Denied error from layer by.
func DenyBy(by, message string) error { return &Denied{Message: message, By: by} }

// IsDenied reports whether err is a denial and returns it.
func IsDenied(err error) (*Denied, bool) {
	var d *Denied
	ok := errors.As(err, &d)
	return d, ok
}
