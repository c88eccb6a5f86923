// Package credential builds Antler's built-in credential layers as
// interceptors: OAuth, per-user (user_auth) and per-request
// (headers_from_context). All fail closed with DeerFlow's messages, and none
// ever puts a credential into a message, a log line or a result.
//
// Upstream credentials are always the host's own: the key a caller used to
// reach the gateway is never forwarded upstream.
package credential

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/header"
	"github.com/antler-mcp/antler/internal/interceptor"
	"github.com/antler-mcp/antler/internal/oauth"
)

// Chain returns the interceptor chain for ext in DeerFlow's order: OAuth,
// user_auth, then custom (plugins, in file order), then headers_from_context,
// so per-request values win. Layers with no server to act on are left out.
func Chain(ext *config.Extensions, tokens *oauth.Manager, custom []interceptor.Interceptor, log *slog.Logger) []interceptor.Interceptor {
	return chain(ext, tokens, custom, log, true)
}

// BackgroundChain is Chain without headers_from_context, for calls made
// outside an agent's request (durable task status and cancel polls): there
// are no per-request secrets then, and the server-level credentials apply.
func BackgroundChain(ext *config.Extensions, tokens *oauth.Manager, custom []interceptor.Interceptor, log *slog.Logger) []interceptor.Interceptor {
	return chain(ext, tokens, custom, log, false)
}

// Layers is Chain without custom interceptors, for every request other than
// tools/call (resources/read, prompts/get, ...): the built-in layers put the
// server's credentials on any request, while plugins' ABI speaks of tool
// calls, so they see tool calls only.
func Layers(ext *config.Extensions, tokens *oauth.Manager, log *slog.Logger) []interceptor.Interceptor {
	return chain(ext, tokens, nil, log, true)
}

func chain(ext *config.Extensions, tokens *oauth.Manager, custom []interceptor.Interceptor, log *slog.Logger, requestScoped bool) []interceptor.Interceptor {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var chain []interceptor.Interceptor
	if tokens != nil {
		for _, s := range ext.Enabled() {
			if tokens.Has(s.Name) {
				chain = append(chain, &oauthLayer{tokens: tokens})
				break
			}
		}
	}
	if ua := newUserAuth(ext, log); ua != nil {
		chain = append(chain, ua)
	}
	chain = append(chain, custom...)
	if ch := newContextHeaders(ext); ch != nil && requestScoped {
		chain = append(chain, ch)
	}
	return chain
}

// isHTTP reports whether headers reach the server on the wire.
func isHTTP(s *config.Server) bool {
	return s.Type == config.TransportHTTP || s.Type == config.TransportSSE
}

// oauthLayer writes Authorization from the server's token endpoint.
type oauthLayer struct {
	tokens *oauth.Manager
}

var _ interceptor.Interceptor = (*oauthLayer)(nil)

// Name is the layer's name in a trace.
func (l *oauthLayer) Name() string { return "oauth" }

func (l *oauthLayer) Intercept(ctx context.Context, req *interceptor.Request, next interceptor.Handler) (json.RawMessage, error) {
	h, err := l.tokens.Header(ctx, req.Server.Name)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, interceptor.DenyBy(interceptor.DeniedByCredential, err.Error())
	}
	if h != "" {
		req.SetHeaders(header.Override{Name: "Authorization", Value: h})
	}
	return next(ctx, req)
}

// userAuth injects the calling user's own credential.
type userAuth struct {
	servers map[string]*config.UserAuth
	log     *slog.Logger
}

var _ interceptor.Interceptor = (*userAuth)(nil)

func newUserAuth(ext *config.Extensions, log *slog.Logger) *userAuth {
	ua := &userAuth{servers: map[string]*config.UserAuth{}, log: log}
	for _, s := range ext.Enabled() {
		if s.UserAuth != nil && s.UserAuth.Enabled && isHTTP(s) {
			ua.servers[s.Name] = s.UserAuth
		}
	}
	if len(ua.servers) == 0 {
		return nil
	}
	return ua
}

// Name is the layer's name in a trace.
func (l *userAuth) Name() string { return "user_auth" }

func (l *userAuth) Intercept(ctx context.Context, req *interceptor.Request, next interceptor.Handler) (json.RawMessage, error) {
	cfg, ok := l.servers[req.Server.Name]
	if !ok {
		return next(ctx, req)
	}
	user := req.UserID
	if user == "" {
		user = "default"
	}
	cred, _ := cfg.Users.Get(user)
	if cred == "" {
		if cfg.OnMissing == config.OnMissingPassthrough {
			return next(ctx, req)
		}
		l.log.Warn("no user_auth credential for caller", "server", req.Server.Name, "user", user)
		return nil, interceptor.DenyBy(interceptor.DeniedByCredential, fmt.Sprintf("No credential is configured for your account (user id '%s') on MCP server '%s'. Ask the operator to add this exact id to that server's user_auth.users map (or set its environment variable).", user, req.Server.Name))
	}
	if reason := header.IllegalValueReason(cred); reason != "" {
		l.log.Warn("user_auth credential cannot be sent as a header", "server", req.Server.Name, "user", user, "reason", reason)
		return nil, interceptor.DenyBy(interceptor.DeniedByCredential, fmt.Sprintf("The credential configured for your account (user id '%s') on MCP server '%s' %s, so it cannot be sent as an HTTP header. Ask the operator to fix that server's user_auth.users entry; a stray newline in the value or its environment variable is the usual cause.", user, req.Server.Name, reason))
	}
	req.SetHeaders(header.Override{Name: cfg.Header, Value: cred})
	return next(ctx, req)
}

// contextHeaders maps per-request secrets to headers.
type contextHeaders struct {
	servers map[string]*config.ContextHeaders
}

var _ interceptor.Interceptor = (*contextHeaders)(nil)

func newContextHeaders(ext *config.Extensions) *contextHeaders {
	ch := &contextHeaders{servers: map[string]*config.ContextHeaders{}}
	for _, s := range ext.Enabled() {
		if c := s.HeadersFromContext; c != nil && c.Enabled && len(c.Headers) > 0 && isHTTP(s) {
			ch.servers[s.Name] = c
		}
	}
	if len(ch.servers) == 0 {
		return nil
	}
	return ch
}

// Name is the layer's name in a trace.
func (l *contextHeaders) Name() string { return "headers_from_context" }

func (l *contextHeaders) Intercept(ctx context.Context, req *interceptor.Request, next interceptor.Handler) (json.RawMessage, error) {
	cfg, ok := l.servers[req.Server.Name]
	if !ok {
		return next(ctx, req)
	}
	var missing []string
	illegal := map[string]string{}
	var resolved []header.Override
	for _, h := range cfg.Headers {
		v := req.Secrets[h.Value]
		switch {
		case v == "":
			missing = append(missing, h.Value)
		case header.IllegalValueReason(v) != "":
			illegal[h.Value] = header.IllegalValueReason(v)
		default:
			resolved = append(resolved, header.Override{Name: h.Key, Value: v})
		}
	}
	if len(illegal) > 0 {
		keys := make([]string, 0, len(illegal))
		for k := range illegal {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("'%s' %s", k, illegal[k])
		}
		return nil, interceptor.DenyBy(interceptor.DeniedByCredential, fmt.Sprintf("MCP server '%s' cannot send request-scoped credential(s) as HTTP header values: %s. Fix the value passed in config.context.secrets; a stray newline picked up when reading a token from a file is the usual cause.", req.Server.Name, strings.Join(parts, "; ")))
	}
	if len(missing) > 0 && cfg.OnMissing != config.OnMissingPassthrough {
		sort.Strings(missing)
		return nil, interceptor.DenyBy(interceptor.DeniedByCredential, fmt.Sprintf("MCP server '%s' needs request-scoped credential(s) %s. Send them in config.context.secrets, or set this server's headers_from_context.on_missing to 'passthrough'.", req.Server.Name, strings.Join(dedupe(missing), ", ")))
	}
	if len(resolved) > 0 {
		req.SetHeaders(resolved...)
	}
	return next(ctx, req)
}

func dedupe(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}
