package interceptor

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/header"
	"github.com/antler-mcp/antler/internal/plugins"
)

// FromPlugin adapts a loaded plugin to the chain. The plugin sees the call's
// headers, arguments and identity, the names of the call's secrets, and the
// values of the secrets its entry grants. Its failures fail the call closed;
// its denials reach the model as the tool's error.
func FromPlugin(p *plugins.Plugin) Interceptor { return &pluginLayer{p: p} }

type pluginLayer struct {
	p *plugins.Plugin
}

var _ Interceptor = (*pluginLayer)(nil)
var _ Named = (*pluginLayer)(nil)

// Name is the plugin's entry name.
func (l *pluginLayer) Name() string { return l.p.Entry.Name }

func (l *pluginLayer) Intercept(ctx context.Context, req *Request, next Handler) (json.RawMessage, error) {
	p := l.p
	if !p.Entry.Applies(req.Server.Name) {
		return next(ctx, req)
	}
	if p.HasIntercept() {
		in := abi.InterceptRequest{
			Server:       req.Server.Name,
			Transport:    req.Server.Type,
			Tool:         req.ExposedName,
			OriginalTool: req.Tool,
			Arguments:    req.Arguments,
			UserID:       req.UserID,
			ThreadID:     req.ThreadID,
		}
		for name, value := range req.Headers {
			in.Headers = append(in.Headers, abi.Header{Name: name, Value: value})
		}
		sort.Slice(in.Headers, func(i, j int) bool { return in.Headers[i].Name < in.Headers[j].Name })
		for name, value := range req.Secrets {
			in.SecretNames = append(in.SecretNames, name)
			if p.Entry.Grants.Allows(name) {
				in.Secrets = append(in.Secrets, abi.Header{Name: name, Value: value})
			}
		}
		sort.Strings(in.SecretNames)
		sort.Slice(in.Secrets, func(i, j int) bool { return in.Secrets[i].Name < in.Secrets[j].Name })

		resp, err := p.Intercept(ctx, req.UserID, &in)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, DenyBy(DeniedByPlugin, p.FailureMessage())
		}
		if resp.Action == abi.ActionDeny {
			return nil, DenyBy(DeniedByPlugin, safeMessage(resp.Message, p.Entry.Name))
		}
		if err := apply(req, &resp); err != nil {
			return nil, DenyBy(DeniedByPlugin, p.FailureMessage())
		}
	}
	result, err := next(ctx, req)
	if err != nil || !p.HasResultHook() {
		return result, err
	}
	out, herr := p.OnResult(ctx, req.UserID, &abi.ResultRequest{
		Server: req.Server.Name, Tool: req.ExposedName, OriginalTool: req.Tool,
		UserID: req.UserID, ThreadID: req.ThreadID, Result: result,
	})
	if herr != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, DenyBy(DeniedByPlugin, p.FailureMessage())
	}
	if out.Result == nil {
		return result, nil
	}
	if !isJSONObject(out.Result) {
		return nil, DenyBy(DeniedByPlugin, p.FailureMessage())
	}
	return append(json.RawMessage(nil), out.Result...), nil
}

// apply writes a plugin's header and argument changes into req.
func apply(req *Request, resp *abi.InterceptResponse) error {
	for _, name := range resp.RemoveHeaders {
		for k := range req.Headers {
			if strings.EqualFold(k, name) {
				delete(req.Headers, k)
			}
		}
	}
	if len(resp.SetHeaders) > 0 {
		overrides := make([]header.Override, 0, len(resp.SetHeaders))
		for _, h := range resp.SetHeaders {
			if header.IllegalValueReason(h.Value) != "" || header.IllegalNameReason(h.Name) != "" {
				return errBadHeader
			}
			overrides = append(overrides, header.Override{Name: h.Name, Value: h.Value})
		}
		req.SetHeaders(overrides...)
	}
	if resp.Arguments != nil {
		if !isJSONObject(resp.Arguments) {
			return errBadArguments
		}
		req.Arguments = append(json.RawMessage(nil), resp.Arguments...)
	}
	return nil
}

type pluginError string

func (e pluginError) Error() string { return string(e) }

const (
	errBadHeader    pluginError = "plugin set an invalid header"
	errBadArguments pluginError = "plugin replaced the arguments with something that is not a JSON object"
)

func isJSONObject(b []byte) bool {
	t := bytes.TrimSpace(b)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// safeMessage bounds a plugin's denial text and strips control characters.
func safeMessage(msg, plugin string) string {
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' {
			return -1
		}
		return r
	}, msg)
	if strings.TrimSpace(msg) == "" {
		return "MCP interceptor '" + plugin + "' denied the call"
	}
	if len(msg) > 1000 {
		cut := 1000
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut-- // never split a character
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
