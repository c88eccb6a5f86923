package config

import (
	"crypto/sha256"
	"encoding/json"
)

// MarshalJSON writes the resolved configuration in the file's shape (aliases
// such as mcpServers, every field with its effective value, unknown keys kept).
// It holds resolved secrets: write it only where the original could be read.
func (e *Extensions) MarshalJSON() ([]byte, error) {
	out := NewObject()
	if e.resolved != nil {
		for _, k := range e.resolved.Keys() {
			if !topFields[k] {
				v, _ := e.resolved.Get(k)
				out.Set(k, v)
			}
		}
	}
	mw := e.Middlewares
	if mw == nil {
		mw = []string{}
	}
	out.Set("middlewares", mw)
	servers := NewObject()
	for _, s := range e.Servers {
		servers.Set(s.Name, s.fileObject(true))
	}
	out.Set("mcpServers", servers)
	if e.InterceptorSpecs != nil {
		specs := make([]json.RawMessage, len(e.InterceptorSpecs))
		for i, sp := range e.InterceptorSpecs {
			specs[i] = sp.JSON
		}
		out.Set("mcpInterceptors", specs)
	}
	skills := any(NewObject())
	if e.resolved != nil {
		if v, ok := e.resolved.Get("skills"); ok && v != nil {
			skills = v
		}
	}
	out.Set("skills", skills)
	return out.MarshalJSON()
}

// MCPDigest identifies the effective MCP slice of the configuration: the
// enabled servers in order with their normalised settings, and the
// interceptor list. Edits outside it (skills, middlewares, a disabled
// server) leave it unchanged, so they do not reconnect anything.
func (e *Extensions) MCPDigest() [32]byte {
	h := sha256.New()
	if e != nil {
		for _, s := range e.Enabled() {
			name, _ := json.Marshal(s.Name)
			h.Write(name)
			h.Write([]byte{0})
			h.Write(s.slice)
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
		for _, sp := range e.InterceptorSpecs {
			h.Write(sp.JSON)
			h.Write([]byte{0})
		}
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// Slice returns the canonical JSON of this server's effective settings
// (resolved values included); equal slices mean an unchanged server.
func (s *Server) Slice() []byte { return s.slice }

// fileObject renders a server in the file's shape. keepAlias keeps a raw
// "transport" key among the extras (the round trip); without it the alias
// is dropped so equivalent spellings compare equal.
func (s *Server) fileObject(keepAlias bool) *Object {
	o := NewObject()
	o.Set("enabled", s.Enabled)
	o.Set("type", s.Type)
	o.Set("command", nullable(s.Command))
	o.Set("args", nonNil(s.Args))
	o.Set("env", pairsObject(s.Env))
	o.Set("url", nullable(s.URL))
	o.Set("headers", pairsObject(s.Headers))
	o.Set("oauth", oauthObject(s.OAuth))
	o.Set("user_auth", userAuthObject(s.UserAuth))
	o.Set("headers_from_context", contextHeadersObject(s.HeadersFromContext))
	o.Set("description", s.Description)
	o.Set("routing", routingObject(s.Routing))
	tools := NewObject()
	for _, name := range sortedToolNames(s.Tools) {
		ov := s.Tools[name]
		to := NewObject()
		if ov.Routing != nil {
			to.Set("routing", routingOverrideObject(ov.Routing))
		}
		mergeExtras(to, ov.Extra, true)
		tools.Set(name, to)
	}
	o.Set("tools", tools)
	o.Set("tool_name_prefix", s.ToolNamePrefix)
	o.Set("tool_call_timeout", secondsValue(s.ToolCallTimeout.Seconds()))
	o.Set("session_init_timeout", secondsValue(s.SessionInitTimeout.Seconds()))
	toolsets := make([]any, 0, len(s.TaskToolsets))
	for _, ts := range s.TaskToolsets {
		t := NewObject()
		t.Set("name", ts.Name)
		t.Set("submit_tool", ts.SubmitTool)
		t.Set("status_tool", ts.StatusTool)
		t.Set("cancel_tool", ts.CancelTool)
		if ts.RespondTool != "" {
			t.Set("respond_tool", ts.RespondTool)
		}
		if len(ts.Driver) > 0 {
			if dv, err := ParseJSON(ts.Driver); err == nil {
				t.Set("driver", dv)
			}
		}
		toolsets = append(toolsets, t)
	}
	o.Set("task_toolsets", toolsets)
	if s.Cwd != "" {
		o.Set("cwd", s.Cwd)
	}
	if s.ProtocolVersion != "" {
		o.Set("protocol_version", s.ProtocolVersion)
	}
	if s.MaxResultBytes != 0 {
		o.Set("max_result_bytes", s.MaxResultBytes)
	}
	if s.SpecTasks != "" {
		o.Set("spec_tasks", s.SpecTasks)
	}
	if s.ToolCatalog != "" {
		o.Set("tool_catalog", s.ToolCatalog)
	}
	if len(s.Driver) > 0 {
		if dv, err := ParseJSON(s.Driver); err == nil {
			o.Set("driver", dv)
		}
	}
	if s.SpecTaskTTL != 0 {
		o.Set("spec_task_ttl_seconds", secondsValue(s.SpecTaskTTL.Seconds()))
	}
	mergeExtras(o, s.Extra, keepAlias)
	return o
}

func mergeExtras(dst, extra *Object, keepAlias bool) {
	for _, k := range extra.Keys() {
		if !keepAlias && k == "transport" {
			continue
		}
		v, _ := extra.Get(k)
		dst.Set(k, v)
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func secondsValue(f float64) any {
	if f == 0 {
		return nil
	}
	return f
}

func pairsObject(p Pairs) *Object {
	o := NewObject()
	for _, e := range p {
		o.Set(e.Key, e.Value)
	}
	return o
}

func routingObject(r Routing) *Object {
	o := NewObject()
	o.Set("mode", r.Mode)
	o.Set("priority", r.Priority)
	o.Set("keywords", nonNil(r.Keywords))
	return o
}

func routingOverrideObject(r *RoutingOverride) *Object {
	o := NewObject()
	if r.Mode != nil {
		o.Set("mode", *r.Mode)
	}
	if r.Priority != nil {
		o.Set("priority", *r.Priority)
	}
	if r.Keywords != nil {
		o.Set("keywords", nonNil(*r.Keywords))
	}
	return o
}

func oauthObject(a *OAuth) any {
	if a == nil {
		return nil
	}
	o := NewObject()
	o.Set("enabled", a.Enabled)
	o.Set("token_url", a.TokenURL)
	o.Set("grant_type", a.GrantType)
	o.Set("client_id", nullable(a.ClientID))
	o.Set("client_secret", nullable(a.ClientSecret))
	o.Set("refresh_token", nullable(a.RefreshToken))
	o.Set("scope", nullable(a.Scope))
	o.Set("audience", nullable(a.Audience))
	o.Set("token_field", a.TokenField)
	o.Set("token_type_field", a.TokenTypeField)
	o.Set("expires_in_field", a.ExpiresInField)
	o.Set("default_token_type", a.DefaultTokenType)
	o.Set("refresh_skew_seconds", a.RefreshSkewSeconds)
	o.Set("extra_token_params", pairsObject(a.ExtraTokenParams))
	mergeExtras(o, a.Extra, true)
	return o
}

func userAuthObject(u *UserAuth) any {
	if u == nil {
		return nil
	}
	o := NewObject()
	o.Set("enabled", u.Enabled)
	o.Set("header", u.Header)
	o.Set("users", pairsObject(u.Users))
	o.Set("on_missing", u.OnMissing)
	mergeExtras(o, u.Extra, true)
	return o
}

func contextHeadersObject(c *ContextHeaders) any {
	if c == nil {
		return nil
	}
	o := NewObject()
	o.Set("enabled", c.Enabled)
	o.Set("headers", pairsObject(c.Headers))
	o.Set("on_missing", c.OnMissing)
	mergeExtras(o, c.Extra, true)
	return o
}

func sortedToolNames(m map[string]ToolOverride) []string {
	set := make(map[string]bool, len(m))
	for k := range m {
		set[k] = true
	}
	return sortedKeys(set)
}
