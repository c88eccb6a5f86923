package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/antler-mcp/antler/internal/envvar"
	"github.com/antler-mcp/antler/internal/header"
	"github.com/antler-mcp/antler/internal/plugins"
)

// Limits from DeerFlow's models.
const (
	maxTaskServerName  = 128
	maxTaskToolsetName = 255
)

var (
	serverFields = keySet("enabled", "type", "command", "args", "env", "url", "headers",
		"oauth", "user_auth", "headers_from_context", "description", "routing", "tools",
		"tool_name_prefix", "tool_call_timeout", "session_init_timeout", "task_toolsets",
		"cwd", "protocol_version", "max_result_bytes", "spec_tasks", "spec_task_ttl_seconds", "tool_catalog", "driver")
	routingFields = keySet("mode", "priority", "keywords")
	oauthFields   = keySet("enabled", "token_url", "grant_type", "client_id", "client_secret",
		"refresh_token", "scope", "audience", "token_field", "token_type_field",
		"expires_in_field", "default_token_type", "refresh_skew_seconds", "extra_token_params")
	userAuthFields       = keySet("enabled", "header", "users", "on_missing")
	contextHeadersFields = keySet("enabled", "headers", "on_missing")
	toolsetFields        = keySet("name", "submit_tool", "status_tool", "cancel_tool", "respond_tool", "driver")
	topFields            = keySet("mcpServers", "mcp_servers", "mcpInterceptors", "middlewares", "skills")
)

// SyntaxError reports a document that is not valid JSON.
type SyntaxError struct{ Err error }

func (e *SyntaxError) Error() string { return "not valid JSON: " + e.Err.Error() }
func (e *SyntaxError) Unwrap() error { return e.Err }

// Parse reads an extensions_config.json document. lookup resolves $VAR
// references (nil means the process environment). The error is a
// *SyntaxError or Problems; on Problems the returned Extensions is nil.
func Parse(data []byte, lookup envvar.Lookup) (*Extensions, error) {
	if !utf8.Valid(data) {
		return nil, &SyntaxError{Err: fmt.Errorf("the file is not UTF-8 text")}
	}
	tree, err := ParseJSON(data)
	if err != nil {
		return nil, &SyntaxError{Err: err}
	}
	return FromTree(tree, lookup)
}

// FromTree builds Extensions from an ordered JSON tree (as from ParseJSON)
// holding the raw, unsubstituted document.
func FromTree(tree any, lookup envvar.Lookup) (*Extensions, error) {
	d := &decoder{lookup: lookup}
	raw, ok := tree.(*Object)
	if !ok {
		d.fail("", "the document must be a JSON object, got %s", JSONType(tree))
		return nil, d.problems
	}
	resolved := d.substitute(raw).(*Object)
	ext := &Extensions{Raw: raw, resolved: resolved}

	serversKey := "mcpServers"
	if _, ok := resolved.Get(serversKey); !ok {
		if _, ok := resolved.Get("mcp_servers"); ok {
			serversKey = "mcp_servers"
		}
	}
	if v, ok := resolved.Get(serversKey); ok && v != nil {
		if servers, ok := d.object(serversKey, v); ok {
			rawServers := rawObj(raw, serversKey)
			for _, name := range servers.Keys() {
				sv, _ := servers.Get(name)
				if s := d.server(joinPath(serversKey, name), name, sv, rawObj(rawServers, name)); s != nil {
					ext.Servers = append(ext.Servers, s)
				}
			}
		}
	}

	addSpec := func(path string, v any) {
		b, _ := json.Marshal(v)
		ext.InterceptorSpecs = append(ext.InterceptorSpecs, InterceptorSpec{Path: path, JSON: b})
	}
	switch v := rawAt(resolved, "mcpInterceptors").(type) {
	case nil:
	case string:
		ext.Interceptors = []string{v}
		addSpec("mcpInterceptors", v)
	case []any:
		for i, e := range v {
			switch t := e.(type) {
			case string:
				ext.Interceptors = append(ext.Interceptors, t)
				addSpec(indexPath("mcpInterceptors", i), t)
			case *Object:
				addSpec(indexPath("mcpInterceptors", i), t)
			default:
				d.warn(indexPath("mcpInterceptors", i), "must be a string or an object, got %s; skipping", JSONType(e))
			}
		}
	default:
		d.warn("mcpInterceptors", "must be a list of strings, got %s; skipping", JSONType(v))
	}

	if v, ok := resolved.Get("middlewares"); ok && v != nil {
		ext.Middlewares = d.strList("middlewares", v)
	}
	if v, ok := resolved.Get("skills"); ok && v != nil {
		if skills, ok := d.object("skills", v); ok {
			for _, name := range skills.Keys() {
				sv, _ := skills.Get(name)
				path := joinPath("skills", name)
				if so, ok := d.object(path, sv); ok {
					if ev, ok := so.Get("enabled"); ok {
						d.boolean(joinPath(path, "enabled"), ev, true)
					}
				}
			}
		}
	}

	if len(d.problems) > 0 {
		return nil, d.problems
	}
	ext.Warnings = d.warnings
	for _, s := range ext.Servers {
		s.slice = canonicalSlice(s)
	}
	return ext, nil
}

func (d *decoder) server(path, name string, v any, raw *Object) *Server {
	o, ok := d.object(path, v)
	if !ok {
		return nil
	}
	s := &Server{
		Name:               name,
		Enabled:            true,
		Type:               TransportStdio,
		ToolNamePrefix:     true,
		SessionInitTimeout: DefaultSessionInitTimeout,
		Routing:            Routing{Mode: RoutingOff},
		Extra:              extras(o, serverFields),
	}
	get := func(k string) (any, bool) { return o.Get(k) }
	field := func(k string) string { return joinPath(path, k) }

	if v, ok := get("enabled"); ok {
		s.Enabled = d.boolean(field("enabled"), v, true)
	}

	// "transport" is the MCP-spec spelling of "type"; "type" wins when both
	// are set. The raw key stays in Extra so it round-trips.
	typeKey := "type"
	tv, hasType := get("type")
	if ts, _ := tv.(string); !hasType || tv == nil || ts == "" {
		if alt, ok := get("transport"); ok {
			if as, isStr := alt.(string); isStr && as != "" {
				typeKey, tv, hasType = "transport", alt, true
			}
		}
	}
	if hasType && tv != nil {
		if t, ok := d.str(field(typeKey), tv); ok && t != "" {
			s.Type = t
		}
	}
	if v, ok := get("command"); ok {
		s.Command = d.optStr(field("command"), v)
	}
	if v, ok := get("args"); ok && v != nil {
		s.Args = d.strList(field("args"), v)
	}
	if v, ok := get("env"); ok {
		s.Env = d.strMap(field("env"), v)
	}
	if v, ok := get("url"); ok {
		s.URL = d.optStr(field("url"), v)
	}
	if v, ok := get("headers"); ok {
		s.Headers = d.strMap(field("headers"), v)
		d.checkHeaderNames(field("headers"), "headers", s.Headers)
	}
	if v, ok := get("cwd"); ok {
		s.Cwd = d.optStr(field("cwd"), v)
	}
	if v, ok := get("description"); ok {
		s.Description = d.optStr(field("description"), v)
	}
	if v, ok := get("tool_name_prefix"); ok {
		s.ToolNamePrefix = d.boolean(field("tool_name_prefix"), v, true)
	}
	if v, ok := get("tool_call_timeout"); ok {
		s.ToolCallTimeout = d.seconds(field("tool_call_timeout"), v)
	}
	if v, ok := get("session_init_timeout"); ok {
		s.SessionInitTimeout = d.seconds(field("session_init_timeout"), v)
	}
	if v, ok := get("protocol_version"); ok {
		s.ProtocolVersion = d.optStr(field("protocol_version"), v)
		if s.ProtocolVersion != "" && !isProtocolVersion(s.ProtocolVersion) {
			d.fail(field("protocol_version"), "must be an MCP revision date such as \"2025-06-18\", got %s", showRaw(rawAt(raw, "protocol_version")))
		}
	}
	if v, ok := get("max_result_bytes"); ok {
		s.MaxResultBytes = d.byteCount(field("max_result_bytes"), v)
	}
	if v, ok := get("tool_catalog"); ok && v != nil {
		s.ToolCatalog, _ = d.enum(field("tool_catalog"), v, rawAt(raw, "tool_catalog"), ToolCatalogWarn, ToolCatalogHold, ToolCatalogOff)
	}
	if v, ok := get("spec_tasks"); ok && v != nil {
		s.SpecTasks, _ = d.enum(field("spec_tasks"), v, rawAt(raw, "spec_tasks"), SpecTasksAuto, SpecTasksOff)
	}
	if v, ok := get("driver"); ok && v != nil {
		s.Driver = d.taskDriver(field("driver"), v)
		if s.Driver != nil && s.SpecTasks == SpecTasksOff {
			d.fail(field("driver"), "drives the server's MCP task tools, which spec_tasks \"off\" turns off: remove one of them")
		}
	}
	if v, ok := get("spec_task_ttl_seconds"); ok && v != nil {
		// Zero would mean "no ttl", which the spec spells by leaving it out.
		if n, isNum := v.(json.Number); isNum {
			if f, err := n.Float64(); err == nil && f >= 0 && f < 0.001 {
				d.fail(field("spec_task_ttl_seconds"), "must be at least 0.001 seconds (one millisecond); omit it for the server's default")
			} else {
				s.SpecTaskTTL = d.seconds(field("spec_task_ttl_seconds"), v)
			}
		} else {
			d.seconds(field("spec_task_ttl_seconds"), v)
		}
	}
	if v, ok := get("routing"); ok && v != nil {
		s.Routing = d.routing(field("routing"), v, rawObj(raw, "routing"))
	}
	if v, ok := get("tools"); ok && v != nil {
		s.Tools = d.toolOverrides(field("tools"), v, rawObj(raw, "tools"))
	}
	if v, ok := get("oauth"); ok && v != nil {
		s.OAuth = d.oauth(field("oauth"), v, rawObj(raw, "oauth"))
	}
	if v, ok := get("user_auth"); ok && v != nil {
		s.UserAuth = d.userAuth(field("user_auth"), v, rawObj(raw, "user_auth"))
	}
	if v, ok := get("headers_from_context"); ok && v != nil {
		s.HeadersFromContext = d.contextHeaders(field("headers_from_context"), v, rawObj(raw, "headers_from_context"))
	}
	if v, ok := get("task_toolsets"); ok && v != nil {
		s.TaskToolsets = d.taskToolsets(field("task_toolsets"), v, rawAt(raw, "task_toolsets"))
		if len(s.TaskToolsets) > 0 && (strings.TrimSpace(name) == "" || utf8.RuneCountInString(name) > maxTaskServerName) {
			d.fail(path, "MCP task server name must contain 1 to %d characters", maxTaskServerName)
		}
	}

	if s.HeadersFromContext != nil && s.HeadersFromContext.Enabled && len(s.HeadersFromContext.Headers) > 0 && len(s.TaskToolsets) > 0 {
		d.warn(field("headers_from_context"), "MCP server '%s' declares both headers_from_context and task_toolsets; background task status/cancel polls run outside an Agent run and will use this server's static/OAuth credentials instead of the per-request headers", name)
	}

	// Problems that drop only this server (DeerFlow's build_server_params).
	switch s.Type {
	case TransportStdio:
		if s.Command == "" {
			s.Problem = &FieldError{Path: field("command"), Message: fmt.Sprintf("MCP server '%s' with stdio transport requires 'command' field", name)}
		}
		if s.UserAuth != nil && s.UserAuth.Enabled {
			d.warn(field("user_auth"), "MCP server '%s' declares user_auth but uses the '%s' transport; user-scoped credentials only apply to 'sse'/'http' servers — ignoring user_auth for this server", name, s.Type)
		}
		if s.HeadersFromContext != nil && s.HeadersFromContext.Enabled {
			d.warn(field("headers_from_context"), "MCP server '%s' declares headers_from_context but uses the '%s' transport; request-scoped headers only apply to 'sse'/'http' servers — ignoring headers_from_context for this server", name, s.Type)
		}
	case TransportSSE, TransportHTTP:
		if s.URL == "" {
			s.Problem = &FieldError{Path: field("url"), Message: fmt.Sprintf("MCP server '%s' with %s transport requires 'url' field", name, s.Type)}
		}
		for _, h := range s.Headers {
			if reason := header.IllegalValueReason(h.Value); reason != "" && s.Problem == nil {
				s.Problem = &FieldError{Path: joinPath(field("headers"), h.Key), Message: fmt.Sprintf("MCP server '%s' has a header '%s' that cannot be sent as an HTTP header value: it %s", name, h.Key, reason)}
			}
		}
	default:
		s.Problem = &FieldError{Path: field(typeKey), Message: fmt.Sprintf("MCP server '%s' has unsupported transport type: %s", name, showRaw(rawAt(raw, typeKey)))}
	}
	return s
}

// isProtocolVersion accepts a YYYY-MM-DD revision name.
func isProtocolVersion(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	for i, c := range v {
		if i == 4 || i == 7 {
			continue
		}
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (d *decoder) routing(path string, v any, raw *Object) Routing {
	r := Routing{Mode: RoutingOff}
	ov := d.routingOverride(path, v, raw)
	if ov == nil {
		return r
	}
	if ov.Mode != nil {
		r.Mode = *ov.Mode
	}
	if ov.Priority != nil {
		r.Priority = *ov.Priority
	}
	if ov.Keywords != nil {
		r.Keywords = *ov.Keywords
	}
	return r
}

// routingOverride reads a routing block, recording which fields were set.
// raw is the same block before $VAR substitution (for messages).
func (d *decoder) routingOverride(path string, v any, raw *Object) *RoutingOverride {
	o, ok := d.object(path, v)
	if !ok {
		return nil
	}
	d.forbidExtras(path, o, routingFields)
	ov := &RoutingOverride{}
	if mv, ok := o.Get("mode"); ok {
		if m, ok := d.enum(joinPath(path, "mode"), mv, rawAt(raw, "mode"), RoutingOff, RoutingPrefer); ok {
			ov.Mode = &m
		}
	}
	if pv, ok := o.Get("priority"); ok {
		if p, ok := d.integer(joinPath(path, "priority"), pv); ok {
			if p < 0 {
				d.warn(joinPath(path, "priority"), "MCP routing priority %d is below 0; clamping to 0.", p)
				p = 0
			} else if p > 100 {
				d.warn(joinPath(path, "priority"), "MCP routing priority %d is above 100; clamping to 100.", p)
				p = 100
			}
			ov.Priority = &p
		}
	}
	if kv, ok := o.Get("keywords"); ok {
		kw := d.strList(joinPath(path, "keywords"), kv)
		ov.Keywords = &kw
	}
	return ov
}

func (d *decoder) toolOverrides(path string, v any, raw *Object) map[string]ToolOverride {
	o, ok := d.object(path, v)
	if !ok {
		return nil
	}
	out := make(map[string]ToolOverride, o.Len())
	for _, name := range o.Keys() {
		tv, _ := o.Get(name)
		tpath := joinPath(path, name)
		to, ok := d.object(tpath, tv)
		if !ok {
			continue
		}
		ov := ToolOverride{Extra: extras(to, keySet("routing"))}
		if rv, ok := to.Get("routing"); ok && rv != nil {
			ov.Routing = d.routingOverride(joinPath(tpath, "routing"), rv, rawObj(rawObj(raw, name), "routing"))
		}
		out[name] = ov
	}
	return out
}

func (d *decoder) oauth(path string, v any, raw *Object) *OAuth {
	o, ok := d.object(path, v)
	if !ok {
		return nil
	}
	a := &OAuth{
		Enabled:            true,
		GrantType:          GrantClientCredentials,
		TokenField:         "access_token",
		TokenTypeField:     "token_type",
		ExpiresInField:     "expires_in",
		DefaultTokenType:   "Bearer",
		RefreshSkewSeconds: 60,
		Extra:              extras(o, oauthFields),
	}
	f := func(k string) string { return joinPath(path, k) }
	if v, ok := o.Get("enabled"); ok {
		a.Enabled = d.boolean(f("enabled"), v, true)
	}
	if v, ok := o.Get("token_url"); ok {
		a.TokenURL = d.optStr(f("token_url"), v)
	}
	if v, ok := o.Get("grant_type"); ok {
		if g, ok := d.enum(f("grant_type"), v, rawAt(raw, "grant_type"), GrantClientCredentials, GrantRefreshToken); ok {
			a.GrantType = g
		}
	}
	for key, dst := range map[string]*string{
		"client_id": &a.ClientID, "client_secret": &a.ClientSecret, "refresh_token": &a.RefreshToken,
		"scope": &a.Scope, "audience": &a.Audience,
	} {
		if v, ok := o.Get(key); ok {
			*dst = d.optStr(f(key), v)
		}
	}
	for key, dst := range map[string]*string{
		"token_field": &a.TokenField, "token_type_field": &a.TokenTypeField,
		"expires_in_field": &a.ExpiresInField, "default_token_type": &a.DefaultTokenType,
	} {
		if v, ok := o.Get(key); ok {
			if s, ok := d.str(f(key), v); ok {
				*dst = s
			}
		}
	}
	if v, ok := o.Get("refresh_skew_seconds"); ok {
		if n, ok := d.integer(f("refresh_skew_seconds"), v); ok {
			a.RefreshSkewSeconds = n
		}
	}
	if v, ok := o.Get("extra_token_params"); ok {
		a.ExtraTokenParams = d.strMap(f("extra_token_params"), v)
	}
	if a.Enabled && a.TokenURL == "" {
		if _, set := o.Get("token_url"); set {
			d.fail(f("token_url"), "must not be empty")
		} else {
			d.fail(f("token_url"), "is required")
		}
	}
	return a
}

func (d *decoder) userAuth(path string, v any, raw *Object) *UserAuth {
	o, ok := d.object(path, v)
	if !ok {
		return nil
	}
	u := &UserAuth{Enabled: true, Header: "Authorization", OnMissing: OnMissingDeny, Extra: extras(o, userAuthFields)}
	f := func(k string) string { return joinPath(path, k) }
	if v, ok := o.Get("enabled"); ok {
		u.Enabled = d.boolean(f("enabled"), v, true)
	}
	if v, ok := o.Get("header"); ok {
		if s, ok := d.str(f("header"), v); ok {
			u.Header = s
			if strings.TrimSpace(s) == "" {
				d.fail(f("header"), "user_auth.header must not be empty")
			} else if reason := header.IllegalNameReason(s); reason != "" {
				d.fail(f("header"), "user_auth.header cannot be sent as an HTTP header name: it %s", reason)
			}
		}
	}
	if v, ok := o.Get("users"); ok {
		u.Users = d.strMap(f("users"), v)
	}
	if v, ok := o.Get("on_missing"); ok {
		if m, ok := d.enum(f("on_missing"), v, rawAt(raw, "on_missing"), OnMissingDeny, OnMissingPassthrough); ok {
			u.OnMissing = m
		}
	}
	return u
}

func (d *decoder) contextHeaders(path string, v any, raw *Object) *ContextHeaders {
	o, ok := d.object(path, v)
	if !ok {
		return nil
	}
	c := &ContextHeaders{Enabled: true, OnMissing: OnMissingDeny, Extra: extras(o, contextHeadersFields)}
	f := func(k string) string { return joinPath(path, k) }
	if v, ok := o.Get("enabled"); ok {
		c.Enabled = d.boolean(f("enabled"), v, true)
	}
	if v, ok := o.Get("headers"); ok {
		c.Headers = d.strMap(f("headers"), v)
		// The values name keys of a call's secrets, not environment
		// variables: keep them as written, never $VAR-resolved (a resolved
		// value would reach a model in the "needs credential(s)" message).
		rawHeaders := rawObj(raw, "headers")
		for i, p := range c.Headers {
			if rv, ok := rawAt(rawHeaders, p.Key).(string); ok {
				c.Headers[i].Value = rv
			}
		}
		for _, p := range c.Headers {
			if strings.TrimSpace(p.Key) != "" && strings.TrimSpace(p.Value) == "" {
				d.fail(joinPath(f("headers"), p.Key), "headers_from_context.headers['%s'] must name a non-blank secret key from config.context.secrets", p.Key)
			}
		}
		d.checkHeaderNames(f("headers"), "headers_from_context.headers", c.Headers)
	}
	if v, ok := o.Get("on_missing"); ok {
		if m, ok := d.enum(f("on_missing"), v, rawAt(raw, "on_missing"), OnMissingDeny, OnMissingPassthrough); ok {
			c.OnMissing = m
		}
	}
	return c
}

func (d *decoder) taskToolsets(path string, v, raw any) []TaskToolset {
	rawList, _ := raw.([]any)
	list, ok := v.([]any)
	if !ok {
		d.fail(path, "must be a list, got %s", JSONType(v))
		return nil
	}
	var out []TaskToolset
	type role struct{ toolset, role string }
	seen := map[string]role{}
	for i, e := range list {
		p := indexPath(path, i)
		o, ok := d.object(p, e)
		if !ok {
			continue
		}
		d.forbidExtras(p, o, toolsetFields)
		var rawTS *Object
		if i < len(rawList) {
			rawTS, _ = rawList[i].(*Object)
		}
		var ts TaskToolset
		if nv, ok := o.Get("name"); ok {
			if s, ok := d.str(joinPath(p, "name"), nv); ok {
				ts.Name = s
				if strings.TrimSpace(s) == "" {
					d.fail(joinPath(p, "name"), "MCP task toolset name must not be empty")
				} else if utf8.RuneCountInString(s) > maxTaskToolsetName {
					d.fail(joinPath(p, "name"), "must be at most %d characters", maxTaskToolsetName)
				}
			}
		} else {
			d.fail(joinPath(p, "name"), "is required")
		}
		for _, r := range []struct {
			key      string
			dst      *string
			optional bool
		}{{"submit_tool", &ts.SubmitTool, false}, {"status_tool", &ts.StatusTool, false}, {"cancel_tool", &ts.CancelTool, false},
			{"respond_tool", &ts.RespondTool, true}} {
			rv, ok := o.Get(r.key)
			if !ok || (r.optional && rv == nil) {
				if !r.optional {
					d.fail(joinPath(p, r.key), "is required")
				}
				continue
			}
			s, ok := d.str(joinPath(p, r.key), rv)
			if !ok {
				continue
			}
			if s == "" {
				d.fail(joinPath(p, r.key), "must not be empty")
				continue
			}
			*r.dst = s
			this := role{shown(rawAt(rawTS, "name"), ts.Name), strings.TrimSuffix(r.key, "_tool")}
			if prev, dup := seen[s]; dup {
				d.fail(joinPath(p, r.key), "MCP task tool '%s' must be unique across task_toolsets and roles; it is configured as both %s.%s and %s.%s", shown(rawAt(rawTS, r.key), s), prev.toolset, prev.role, this.toolset, this.role)
			} else {
				seen[s] = this
			}
		}
		if dv, ok := o.Get("driver"); ok && dv != nil {
			ts.Driver = d.taskDriver(joinPath(p, "driver"), dv)
		}
		out = append(out, ts)
	}
	return out
}

// taskDriver checks a task toolset's driver: an mcpInterceptors-style entry
// of kind wasm or process. Its path is resolved when the driver is loaded.
func (d *decoder) taskDriver(path string, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		d.fail(path, "must be \"wasm:<path>\", \"process:<path>\" or an object")
		return nil
	}
	e, skip, _, err := plugins.ParseEntry(path, b, "/")
	switch {
	case err != nil:
		// ParseEntry names the field after path: keep that path.
		rest := strings.TrimPrefix(err.Error(), path)
		if sub, ok := strings.CutPrefix(rest, "."); ok {
			field, msg, _ := strings.Cut(sub, ": ")
			d.fail(joinPath(path, field), "%s", msg)
		} else {
			d.fail(path, "%s", strings.TrimPrefix(rest, ": "))
		}
		return nil
	case skip:
		d.fail(path, "must be \"wasm:<path>\", \"process:<path>\" or an object (a Python module:attr cannot drive tasks)")
		return nil
	case e.Kind != plugins.KindWasm && e.Kind != plugins.KindProcess:
		d.fail(joinPath(path, "kind"), "a task driver must be \"wasm\" or \"process\"")
		return nil
	}
	return b
}

// canonicalSlice renders the settings of s that decide how it is served, in
// a fixed form: two spellings of the same configuration (type vs transport)
// compare equal. It may contain resolved secrets; it is only ever compared.
func canonicalSlice(s *Server) []byte {
	b, _ := json.Marshal(s.fileObject(false))
	return b
}
