package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
)

// TestParseValid reads well-formed files and checks the parsed fields and
// every default of DeerFlow's models (server, OAuth, task and routing
// settings).
func TestParseValid(t *testing.T) {
	tests := []struct {
		name   string
		file   string // under testdata/, or
		doc    string // inline
		lookup map[string]string
		check  func(t *testing.T, ext *config.Extensions)
	}{
		{
			name: "empty document has no servers",
			file: "valid/empty.json",
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "servers", len(ext.Servers), 0)
				equal(t, "enabled", len(ext.Enabled()), 0)
				equal(t, "interceptors", ext.Interceptors, []string(nil))
				equal(t, "warnings", ext.Warnings, []string(nil))
			},
		},
		{
			name: "spec tasks opted out with a ttl",
			doc:  `{"mcpServers": {"a": {"command": "c", "spec_tasks": "off"}, "b": {"command": "c", "spec_task_ttl_seconds": 90.5}, "c": {"command": "c"}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "a enabled", mustServer(t, ext, "a").SpecTasksEnabled(), false)
				b := mustServer(t, ext, "b")
				equal(t, "b enabled", b.SpecTasksEnabled(), true)
				equal(t, "b ttl", b.SpecTaskTTL, 90500*time.Millisecond)
				c := mustServer(t, ext, "c")
				equal(t, "c enabled (default)", c.SpecTasksEnabled(), true)
				equal(t, "c ttl (server default)", c.SpecTaskTTL, time.Duration(0))
			},
		},
		{
			name: "tool catalog policies",
			doc:  `{"mcpServers": {"a": {"command": "c", "tool_catalog": "hold"}, "b": {"command": "c", "tool_catalog": "off"}, "c": {"command": "c"}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "a", mustServer(t, ext, "a").CatalogPolicy(), config.ToolCatalogHold)
				equal(t, "b", mustServer(t, ext, "b").CatalogPolicy(), config.ToolCatalogOff)
				equal(t, "c (default)", mustServer(t, ext, "c").CatalogPolicy(), config.ToolCatalogWarn)
			},
		},
		{
			name: "server defaults",
			file: "valid/minimal.json",
			check: func(t *testing.T, ext *config.Extensions) {
				s := mustServer(t, ext, "fs")
				equal(t, "Enabled", s.Enabled, true)
				equal(t, "Type", s.Type, config.TransportStdio)
				equal(t, "IsStdio", s.IsStdio(), true)
				equal(t, "Command", s.Command, "mcp-fs")
				equal(t, "Args", len(s.Args), 0)
				equal(t, "Env", len(s.Env), 0)
				equal(t, "URL", s.URL, "")
				equal(t, "Headers", len(s.Headers), 0)
				equal(t, "Description", s.Description, "")
				equal(t, "ToolNamePrefix", s.ToolNamePrefix, true)
				equal(t, "SessionInitTimeout", s.SessionInitTimeout, 60*time.Second)
				equal(t, "SessionInitTimeout const", config.DefaultSessionInitTimeout, 60*time.Second)
				equal(t, "ToolCallTimeout", s.ToolCallTimeout, time.Duration(0))
				equal(t, "Routing.Mode", s.Routing.Mode, config.RoutingOff)
				equal(t, "Routing.Priority", s.Routing.Priority, 0)
				equal(t, "Routing.Keywords", len(s.Routing.Keywords), 0)
				equal(t, "OAuth", s.OAuth, (*config.OAuth)(nil))
				equal(t, "UserAuth", s.UserAuth, (*config.UserAuth)(nil))
				equal(t, "HeadersFromContext", s.HeadersFromContext, (*config.ContextHeaders)(nil))
				equal(t, "TaskToolsets", len(s.TaskToolsets), 0)
				equal(t, "Cwd", s.Cwd, "")
				equal(t, "ProtocolVersion", s.ProtocolVersion, "")
				equal(t, "Problem", s.Problem, (*config.FieldError)(nil))
				equal(t, "ExposedName", s.ExposedName("read"), "fs_read")
				equal(t, "OriginalName", s.OriginalName("fs_read"), "read")
			},
		},
		{
			name: "oauth, user_auth and headers_from_context defaults",
			doc: `{"mcpServers": {"api": {"type": "http", "url": "https://api.example.com/mcp",
				"oauth": {"token_url": "https://auth.example.com/token"},
				"user_auth": {},
				"headers_from_context": {}}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				s := mustServer(t, ext, "api")
				want := &config.OAuth{
					Enabled:            true,
					TokenURL:           "https://auth.example.com/token",
					GrantType:          config.GrantClientCredentials,
					TokenField:         "access_token",
					TokenTypeField:     "token_type",
					ExpiresInField:     "expires_in",
					DefaultTokenType:   "Bearer",
					RefreshSkewSeconds: 60,
				}
				equal(t, "OAuth", s.OAuth, want)
				equal(t, "UserAuth", s.UserAuth, &config.UserAuth{Enabled: true, Header: "Authorization", OnMissing: config.OnMissingDeny})
				equal(t, "HeadersFromContext", s.HeadersFromContext, &config.ContextHeaders{Enabled: true, OnMissing: config.OnMissingDeny})
			},
		},
		{
			name: "disabled oauth needs no token_url",
			doc:  `{"mcpServers": {"api": {"type": "sse", "url": "https://x/sse", "oauth": {"enabled": false}}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				s := mustServer(t, ext, "api")
				equal(t, "OAuth.Enabled", s.OAuth.Enabled, false)
				equal(t, "OAuth.TokenURL", s.OAuth.TokenURL, "")
			},
		},
		{
			name: "null blocks are absent",
			doc:  `{"mcpServers": {"a": {"command": "c", "oauth": null, "user_auth": null, "headers_from_context": null, "routing": null, "tools": null, "task_toolsets": null, "args": null, "env": null, "command": "c"}}, "skills": null, "middlewares": null, "mcpInterceptors": null}`,
			check: func(t *testing.T, ext *config.Extensions) {
				s := mustServer(t, ext, "a")
				equal(t, "OAuth", s.OAuth, (*config.OAuth)(nil))
				equal(t, "Routing", s.Routing.Mode, config.RoutingOff)
				equal(t, "Interceptors", ext.Interceptors, []string(nil))
				equal(t, "Warnings", ext.Warnings, []string(nil))
			},
		},
		{
			name: "timeouts: session_init_timeout null disables, 0 is no bound, fractions kept",
			doc: `{"mcpServers": {
				"null-init": {"command": "c", "session_init_timeout": null},
				"zero-init": {"command": "c", "session_init_timeout": 0, "tool_call_timeout": 0},
				"fraction":  {"command": "c", "session_init_timeout": 2.5, "tool_call_timeout": 0.25},
				"call-null": {"command": "c", "tool_call_timeout": null},
				"call-set":  {"command": "c", "tool_call_timeout": 300}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "null-init", mustServer(t, ext, "null-init").SessionInitTimeout, time.Duration(0))
				equal(t, "zero-init", mustServer(t, ext, "zero-init").SessionInitTimeout, time.Duration(0))
				equal(t, "zero-init call", mustServer(t, ext, "zero-init").ToolCallTimeout, time.Duration(0))
				equal(t, "fraction init", mustServer(t, ext, "fraction").SessionInitTimeout, 2500*time.Millisecond)
				equal(t, "fraction call", mustServer(t, ext, "fraction").ToolCallTimeout, 250*time.Millisecond)
				equal(t, "call-null", mustServer(t, ext, "call-null").ToolCallTimeout, time.Duration(0))
				equal(t, "call-null init default", mustServer(t, ext, "call-null").SessionInitTimeout, 60*time.Second)
				equal(t, "call-set", mustServer(t, ext, "call-set").ToolCallTimeout, 300*time.Second)
			},
		},
		{
			name: "tool_name_prefix false exposes original names",
			doc:  `{"mcpServers": {"fs": {"command": "c", "tool_name_prefix": false}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				s := mustServer(t, ext, "fs")
				equal(t, "ToolNamePrefix", s.ToolNamePrefix, false)
				equal(t, "ExposedName", s.ExposedName("read"), "read")
				// An unprefixed server keeps a server-like original name whole.
				equal(t, "OriginalName", s.OriginalName("fs_read"), "fs_read")
			},
		},
		{
			name: "DeerFlow example file",
			file: "valid/example.json",
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "names", serverNames(ext.Servers), []string{"github", "openviking", "postgres", "long-running-reports"})
				equal(t, "enabled", len(ext.Enabled()), 0)
				equal(t, "Interceptors", ext.Interceptors, []string{"my_package.mcp.auth:build_auth_interceptor"})
				equal(t, "Middlewares", ext.Middlewares, []string{})
				gh := mustServer(t, ext, "github")
				equal(t, "github.Enabled", gh.Enabled, false)
				equal(t, "github.Args", gh.Args, []string{"-y", "@modelcontextprotocol/server-github"})
				// GITHUB_TOKEN is unset: the value is "", never the literal "$GITHUB_TOKEN".
				equal(t, "github.Env", gh.Env, config.Pairs{{Key: "GITHUB_TOKEN", Value: ""}})
				equal(t, "github.ToolCallTimeout", gh.ToolCallTimeout, 60*time.Second)
				ov := mustServer(t, ext, "openviking")
				equal(t, "openviking.Type", ov.Type, config.TransportHTTP)
				equal(t, "openviking.URL", ov.URL, "http://127.0.0.1:1933/mcp")
				pg := mustServer(t, ext, "postgres")
				equal(t, "postgres.Routing", pg.Routing, config.Routing{Mode: "prefer", Priority: 50, Keywords: []string{"sql", "database"}})
				equal(t, "postgres query routing", pg.EffectiveRouting("query"), config.Routing{Mode: "prefer", Priority: 100, Keywords: []string{"sql query", "select"}})
				rep := mustServer(t, ext, "long-running-reports")
				equal(t, "reports.TaskToolsets", rep.TaskToolsets, []config.TaskToolset{{
					Name: "report-generation", SubmitTool: "submit_report", StatusTool: "get_report_status", CancelTool: "cancel_report",
				}})
				for _, s := range ext.Servers {
					equal(t, s.Name+".Problem", s.Problem, (*config.FieldError)(nil))
				}
			},
		},
		{
			name: "every field set",
			file: "valid/full.json",
			lookup: map[string]string{
				"CRM_URL": "https://crm.example.com/mcp", "CRM_KEY": "key-1", "CRM_SECRET": "secret-1",
				"CRM_REFRESH": "refresh-1", "ALICE_TOKEN": "Bearer alice", "LOCAL_TOKEN": "local-1",
			},
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "names", serverNames(ext.Servers), []string{"crm", "local"})
				equal(t, "Interceptors", ext.Interceptors, []string{"app.mcp:build"})
				equal(t, "Middlewares", ext.Middlewares, []string{"app.middleware:Audit"})
				crm := mustServer(t, ext, "crm")
				equal(t, "crm.Type", crm.Type, config.TransportHTTP)
				equal(t, "crm.URL", crm.URL, "https://crm.example.com/mcp")
				equal(t, "crm.Headers", crm.Headers, config.Pairs{{Key: "X-Org", Value: "acme"}, {Key: "X-API-Key", Value: "key-1"}})
				equal(t, "crm.Description", crm.Description, "Customer records")
				equal(t, "crm.ToolNamePrefix", crm.ToolNamePrefix, false)
				equal(t, "crm.ToolCallTimeout", crm.ToolCallTimeout, 12500*time.Millisecond)
				equal(t, "crm.SessionInitTimeout", crm.SessionInitTimeout, time.Duration(0))
				equal(t, "crm.ProtocolVersion", crm.ProtocolVersion, "2025-06-18")
				a := crm.OAuth
				equal(t, "oauth.GrantType", a.GrantType, config.GrantRefreshToken)
				equal(t, "oauth.ClientID", a.ClientID, "crm-client")
				equal(t, "oauth.ClientSecret", a.ClientSecret, "secret-1")
				equal(t, "oauth.RefreshToken", a.RefreshToken, "refresh-1")
				equal(t, "oauth.Scope", a.Scope, "read write")
				equal(t, "oauth.Audience", a.Audience, "crm")
				equal(t, "oauth.ExtraTokenParams", a.ExtraTokenParams, config.Pairs{{Key: "resource", Value: "crm"}})
				equal(t, "oauth extra", compact(t, a.Extra), `{"x-oauth":"kept"}`)
				equal(t, "user_auth.Enabled", crm.UserAuth.Enabled, false)
				equal(t, "user_auth.Users", crm.UserAuth.Users, config.Pairs{{Key: "alice", Value: "Bearer alice"}})
				equal(t, "user_auth extra", compact(t, crm.UserAuth.Extra), `{"x-user-auth":true}`)
				equal(t, "ctx.Headers", crm.HeadersFromContext.Headers, config.Pairs{{Key: "X-Tenant", Value: "tenant_token"}})
				equal(t, "ctx.OnMissing", crm.HeadersFromContext.OnMissing, config.OnMissingPassthrough)
				equal(t, "ctx extra", compact(t, crm.HeadersFromContext.Extra), `{"x-ctx":3}`)
				equal(t, "lookup routing", crm.EffectiveRouting("lookup"), config.Routing{Mode: "prefer", Priority: 90, Keywords: []string{"customer", "account"}})
				equal(t, "lookup extra", compact(t, crm.Tools["lookup"].Extra), `{"x-tool":"kept"}`)
				equal(t, "export routing override", crm.Tools["export"].Routing, (*config.RoutingOverride)(nil))
				equal(t, "export extra", compact(t, crm.Tools["export"].Extra), `{"x-tool-only":[]}`)
				// Raw (un-prefixed) tool names, two groups kept in order.
				equal(t, "toolsets", crm.TaskToolsets, []config.TaskToolset{
					{Name: "exports", SubmitTool: "start_export", StatusTool: "export_status", CancelTool: "cancel_export", RespondTool: "answer_export"},
					{Name: "imports", SubmitTool: "start_import", StatusTool: "import_status", CancelTool: "cancel_import"},
				})
				equal(t, "server extra", compact(t, crm.Extra), `{"x-server":{"nested":["key-1"]}}`)
				local := mustServer(t, ext, "local")
				equal(t, "local.Args", local.Args, []string{"-m", "local_mcp", "--token", "local-1"})
				equal(t, "local.Env", local.Env, config.Pairs{{Key: "PYTHONUNBUFFERED", Value: "1"}, {Key: "TOKEN", Value: "local-1"}})
				equal(t, "local.Cwd", local.Cwd, "/srv/local")
				equal(t, "local.SessionInitTimeout", local.SessionInitTimeout, time.Duration(0))
				equal(t, "warnings", ext.Warnings, []string{"mcpServers.crm.headers_from_context: MCP server 'crm' declares both headers_from_context and task_toolsets; background task status/cancel polls run outside an Agent run and will use this server's static/OAuth credentials instead of the per-request headers"})
			},
		},
		{
			name: "mcp_servers spelling is accepted",
			file: "valid/snake_case.json",
			check: func(t *testing.T, ext *config.Extensions) {
				s := mustServer(t, ext, "notes")
				equal(t, "Type", s.Type, config.TransportSSE)
				equal(t, "URL", s.URL, "https://notes.example.com/sse")
			},
		},
		{
			name: "mcpServers wins over mcp_servers",
			doc:  `{"mcp_servers": {"old": {"command": "c"}}, "mcpServers": {"new": {"command": "c"}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "names", serverNames(ext.Servers), []string{"new"})
			},
		},
		{
			name: "transport alias; type wins when both are set",
			file: "valid/transport_alias.json",
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "remote", mustServer(t, ext, "remote").Type, config.TransportHTTP)
				equal(t, "both", mustServer(t, ext, "both").Type, config.TransportSSE)
				equal(t, "blank-type", mustServer(t, ext, "blank-type").Type, config.TransportSSE)
				for _, s := range ext.Servers {
					equal(t, s.Name+".Problem", s.Problem, (*config.FieldError)(nil))
				}
			},
		},
		{
			name: "declaration order of servers is kept",
			doc:  `{"mcpServers": {"zeta": {"command": "z"}, "alpha": {"command": "a", "enabled": false}, "mid": {"command": "m"}, "beta": {"command": "b"}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "all", serverNames(ext.Servers), []string{"zeta", "alpha", "mid", "beta"})
				equal(t, "enabled", serverNames(ext.Enabled()), []string{"zeta", "mid", "beta"})
			},
		},
		{
			name: "a task server name of exactly 128 characters is allowed",
			doc: `{"mcpServers": {"` + strings.Repeat("s", 128) + `": {"type": "http", "url": "https://x",
				"task_toolsets": [{"name": "` + strings.Repeat("n", 255) + `", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c"}]}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "servers", len(ext.Servers), 1)
			},
		},
		{
			name: "a long server name is fine without task_toolsets",
			doc:  `{"mcpServers": {"` + strings.Repeat("s", 300) + `": {"command": "c"}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "servers", len(ext.Servers), 1)
			},
		},
		{
			name: "routing priority bounds are kept as written",
			doc:  `{"mcpServers": {"lo": {"command": "c", "routing": {"priority": 0}}, "hi": {"command": "c", "routing": {"priority": 100.0}}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "lo", mustServer(t, ext, "lo").Routing.Priority, 0)
				equal(t, "hi", mustServer(t, ext, "hi").Routing.Priority, 100)
				equal(t, "warnings", ext.Warnings, []string(nil))
			},
		},
		{
			name: "skills and unknown top-level keys are accepted",
			doc:  `{"skills": {"a": {"enabled": false}, "b": {}}, "something_new": 1}`,
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "servers", len(ext.Servers), 0)
			},
		},
		{
			name: "a key given twice keeps its first position and its last value",
			doc:  `{"mcpServers": {"a": {"command": "first"}, "b": {"command": "b"}, "a": {"command": "last"}}}`,
			check: func(t *testing.T, ext *config.Extensions) {
				equal(t, "names", serverNames(ext.Servers), []string{"a", "b"})
				equal(t, "a.Command", mustServer(t, ext, "a").Command, "last")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := []byte(tt.doc)
			if tt.file != "" {
				doc = readTestdata(t, tt.file)
			}
			tt.check(t, mustParse(t, doc, env(tt.lookup)))
		})
	}
}

// TestParseInvalid checks the exact list of field paths reported for broken
// documents, as DeerFlow's validation reports them.
func TestParseInvalid(t *testing.T) {
	long := strings.Repeat("n", 129)
	tests := []struct {
		name    string
		doc     string
		paths   []string
		message string // a substring of the first problem's message, when it matters
	}{
		{"document not an object", `[]`, []string{""}, "must be a JSON object"},
		{"mcpServers not an object", `{"mcpServers": []}`, []string{"mcpServers"}, "must be an object"},
		{"server not an object", `{"mcpServers": {"x": "npx"}}`, []string{"mcpServers.x"}, "must be an object"},
		{"args entry not a string", `{"mcpServers": {"github": {"command": "npx", "args": ["-y", "pkg", 3]}}}`, []string{"mcpServers.github.args[2]"}, "must be a string, got a number"},
		{"args not a list", `{"mcpServers": {"x": {"command": "c", "args": "-y"}}}`, []string{"mcpServers.x.args"}, "must be a list of strings"},
		{"env value not a string", `{"mcpServers": {"x": {"command": "c", "env": {"PORT": 8080}}}}`, []string{"mcpServers.x.env.PORT"}, ""},
		{"enabled not a boolean", `{"mcpServers": {"x": {"command": "c", "enabled": "yes"}}}`, []string{"mcpServers.x.enabled"}, "true or false"},
		{"type not a string", `{"mcpServers": {"x": {"type": 1, "command": "c"}}}`, []string{"mcpServers.x.type"}, ""},
		{"routing mode", `{"mcpServers": {"x": {"command": "c", "routing": {"mode": "always"}}}}`, []string{"mcpServers.x.routing.mode"}, `must be one of "off", "prefer", got "always"`},
		{"routing unknown field", `{"mcpServers": {"x": {"command": "c", "routing": {"mode": "prefer", "extra_key": 1}}}}`, []string{"mcpServers.x.routing.extra_key"}, "unknown field"},
		{"routing priority not whole", `{"mcpServers": {"x": {"command": "c", "routing": {"priority": 1.5}}}}`, []string{"mcpServers.x.routing.priority"}, "whole number"},
		{"routing priority a string", `{"mcpServers": {"x": {"command": "c", "routing": {"priority": "50"}}}}`, []string{"mcpServers.x.routing.priority"}, "must be a number"},
		{"routing keywords null", `{"mcpServers": {"x": {"command": "c", "routing": {"keywords": null}}}}`, []string{"mcpServers.x.routing.keywords"}, ""},
		{"tool override routing mode", `{"mcpServers": {"x": {"command": "c", "tools": {"query": {"routing": {"mode": "PREFER"}}}}}}`, []string{"mcpServers.x.tools.query.routing.mode"}, ""},
		{"tool override routing unknown field", `{"mcpServers": {"x": {"command": "c", "tools": {"query": {"routing": {"weight": 3}}}}}}`, []string{"mcpServers.x.tools.query.routing.weight"}, "unknown field"},
		{"tool override not an object", `{"mcpServers": {"x": {"command": "c", "tools": {"query": true}}}}`, []string{"mcpServers.x.tools.query"}, ""},
		{"task driver not a plugin", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c", "driver": "module:attr"}]}}}`, []string{"mcpServers.x.task_toolsets[0].driver"}, "must be"},
		{"task driver a number", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c", "driver": 3}]}}}`, []string{"mcpServers.x.task_toolsets[0].driver"}, "must be"},
		{"task driver extism", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c", "driver": "extism:./d.wasm"}]}}}`, []string{"mcpServers.x.task_toolsets[0].driver.kind"}, "must be \"wasm\" or \"process\""},
		{"task driver path missing", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c", "driver": {"kind": "wasm"}}]}}}`, []string{"mcpServers.x.task_toolsets[0].driver.path"}, "is required"},
		{"task driver timeout", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c", "driver": {"kind": "process", "path": "./d", "timeout_ms": -1}}]}}}`, []string{"mcpServers.x.task_toolsets[0].driver.timeout_ms"}, "between"},
		{"server driver not a plugin", `{"mcpServers": {"x": {"type": "http", "url": "u", "driver": "module:attr"}}}`, []string{"mcpServers.x.driver"}, "must be"},
		{"server driver extism", `{"mcpServers": {"x": {"type": "http", "url": "u", "driver": "extism:./d.wasm"}}}`, []string{"mcpServers.x.driver.kind"}, "must be \"wasm\" or \"process\""},
		{"server driver path missing", `{"mcpServers": {"x": {"type": "http", "url": "u", "driver": {"kind": "process"}}}}`, []string{"mcpServers.x.driver.path"}, "is required"},
		{"server driver with spec_tasks off", `{"mcpServers": {"x": {"type": "http", "url": "u", "spec_tasks": "off", "driver": "wasm:./d.wasm"}}}`, []string{"mcpServers.x.driver"}, "spec_tasks"},
		{"task driver unknown field", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c", "driver": {"kind": "wasm", "path": "./d.wasm", "pool": 3}}]}}}`, []string{"mcpServers.x.task_toolsets[0].driver"}, "unknown field"},
		{"task toolset submit_tool missing", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "status_tool": "s", "cancel_tool": "c"}]}}}`, []string{"mcpServers.x.task_toolsets[0].submit_tool"}, "is required"},
		{"task toolset submit_tool empty", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "", "status_tool": "s", "cancel_tool": "c"}]}}}`, []string{"mcpServers.x.task_toolsets[0].submit_tool"}, "must not be empty"},
		{"task toolset unknown field", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c", "timeout": 5}]}}}`, []string{"mcpServers.x.task_toolsets[0].timeout"}, "unknown field"},
		{"task toolset blank name", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "  ", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c"}]}}}`, []string{"mcpServers.x.task_toolsets[0].name"}, "MCP task toolset name must not be empty"},
		{"task toolset name too long", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "` + strings.Repeat("n", 256) + `", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c"}]}}}`, []string{"mcpServers.x.task_toolsets[0].name"}, "at most 255"},
		{"task toolset respond_tool empty", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c", "respond_tool": ""}]}}}`, []string{"mcpServers.x.task_toolsets[0].respond_tool"}, "must not be empty"},
		{"task toolset respond_tool not a string", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c", "respond_tool": 1}]}}}`, []string{"mcpServers.x.task_toolsets[0].respond_tool"}, ""},
		{"respond_tool reused as status_tool", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "reports", "submit_tool": "a", "status_tool": "s", "cancel_tool": "c", "respond_tool": "s"}]}}}`,
			[]string{"mcpServers.x.task_toolsets[0].respond_tool"}, "configured as both reports.status and reports.respond"},
		{"task toolsets not a list", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": {}}}}`, []string{"mcpServers.x.task_toolsets"}, "must be a list"},
		{"task tool reused in two roles", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "reports", "submit_tool": "run", "status_tool": "run", "cancel_tool": "stop"}]}}}`,
			[]string{"mcpServers.x.task_toolsets[0].status_tool"},
			"MCP task tool 'run' must be unique across task_toolsets and roles; it is configured as both reports.submit and reports.status"},
		{"task tool reused across groups", `{"mcpServers": {"x": {"type": "http", "url": "u", "task_toolsets": [{"name": "a", "submit_tool": "s1", "status_tool": "st1", "cancel_tool": "shared"}, {"name": "b", "submit_tool": "s2", "status_tool": "st2", "cancel_tool": "shared"}]}}}`,
			[]string{"mcpServers.x.task_toolsets[1].cancel_tool"},
			"configured as both a.cancel and b.cancel"},
		{"task server name too long", `{"mcpServers": {"` + long + `": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c"}]}}}`,
			[]string{"mcpServers." + long}, "MCP task server name must contain 1 to 128 characters"},
		{"task server name blank", `{"mcpServers": {" ": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "a", "status_tool": "b", "cancel_tool": "c"}]}}}`,
			[]string{"mcpServers. "}, "MCP task server name must contain 1 to 128 characters"},
		{"headers under two spellings", `{"mcpServers": {"x": {"type": "http", "url": "u", "headers": {"Authorization": "a", "authorization": "b"}}}}`,
			[]string{"mcpServers.x.headers"}, `maps the same HTTP header under two spellings ("Authorization" and "authorization")`},
		{"tool_call_timeout negative", `{"mcpServers": {"x": {"command": "c", "tool_call_timeout": -1}}}`, []string{"mcpServers.x.tool_call_timeout"}, "must not be negative"},
		{"session_init_timeout a string", `{"mcpServers": {"x": {"command": "c", "session_init_timeout": "60"}}}`, []string{"mcpServers.x.session_init_timeout"}, "must be a number"},
		{"session_init_timeout a boolean", `{"mcpServers": {"x": {"command": "c", "session_init_timeout": true}}}`, []string{"mcpServers.x.session_init_timeout"}, "must be a number"},
		{"timeout beyond a year", `{"mcpServers": {"x": {"command": "c", "tool_call_timeout": 1e12}}}`, []string{"mcpServers.x.tool_call_timeout"}, ""},
		{"oauth token_url missing", `{"mcpServers": {"x": {"type": "http", "url": "u", "oauth": {"client_id": "id"}}}}`, []string{"mcpServers.x.oauth.token_url"}, "is required"},
		{"oauth token_url empty", `{"mcpServers": {"x": {"type": "http", "url": "u", "oauth": {"token_url": ""}}}}`, []string{"mcpServers.x.oauth.token_url"}, "must not be empty"},
		{"oauth token_url from an unset variable", `{"mcpServers": {"x": {"type": "http", "url": "u", "oauth": {"token_url": "$UNSET_TOKEN_URL"}}}}`, []string{"mcpServers.x.oauth.token_url"}, "must not be empty"},
		{"oauth grant_type", `{"mcpServers": {"x": {"type": "http", "url": "u", "oauth": {"token_url": "t", "grant_type": "password"}}}}`, []string{"mcpServers.x.oauth.grant_type"}, `got "password"`},
		{"oauth refresh_skew_seconds", `{"mcpServers": {"x": {"type": "http", "url": "u", "oauth": {"token_url": "t", "refresh_skew_seconds": "60"}}}}`, []string{"mcpServers.x.oauth.refresh_skew_seconds"}, ""},
		{"user_auth header blank", `{"mcpServers": {"x": {"type": "http", "url": "u", "user_auth": {"header": "  "}}}}`, []string{"mcpServers.x.user_auth.header"}, "user_auth.header must not be empty"},
		{"user_auth on_missing", `{"mcpServers": {"x": {"type": "http", "url": "u", "user_auth": {"on_missing": "allow"}}}}`, []string{"mcpServers.x.user_auth.on_missing"}, ""},
		{"user_auth users not strings", `{"mcpServers": {"x": {"type": "http", "url": "u", "user_auth": {"users": {"alice": 1}}}}}`, []string{"mcpServers.x.user_auth.users.alice"}, ""},
		{"headers_from_context blank header name", `{"mcpServers": {"x": {"type": "http", "url": "u", "headers_from_context": {"headers": {" ": "k"}}}}}`,
			[]string{"mcpServers.x.headers_from_context.headers"}, "headers_from_context.headers must not contain a blank header name"},
		{"header name with CR LF", `{"mcpServers": {"x": {"type": "http", "url": "u", "headers": {"X-A\r\nX-Injected": "1"}}}}`,
			[]string{"mcpServers.x.headers"}, `headers: "X-A\r\nX-Injected" cannot be sent as an HTTP header name`},
		{"stdio header name with LF", `{"mcpServers": {"x": {"command": "c", "headers": {"X-A\n": "1"}}}}`,
			[]string{"mcpServers.x.headers"}, "cannot be sent as an HTTP header name"},
		{"header name with a colon", `{"mcpServers": {"x": {"type": "http", "url": "u", "headers": {"X-A: 1": "1"}}}}`,
			[]string{"mcpServers.x.headers"}, "cannot be sent as an HTTP header name"},
		{"blank static header name", `{"mcpServers": {"x": {"type": "http", "url": "u", "headers": {"": "1"}}}}`,
			[]string{"mcpServers.x.headers"}, "headers must not contain a blank header name"},
		{"user_auth header with CR LF", `{"mcpServers": {"x": {"type": "http", "url": "u", "user_auth": {"header": "Authorization\r\nX-Injected: 1"}}}}`,
			[]string{"mcpServers.x.user_auth.header"}, "user_auth.header cannot be sent as an HTTP header name"},
		{"headers_from_context header name with LF", `{"mcpServers": {"x": {"type": "http", "url": "u", "headers_from_context": {"headers": {"X-Tenant\n": "k"}}}}}`,
			[]string{"mcpServers.x.headers_from_context.headers"}, `headers_from_context.headers: "X-Tenant\n" cannot be sent`},
		{"headers_from_context blank secret key", `{"mcpServers": {"x": {"type": "http", "url": "u", "headers_from_context": {"headers": {"X-Tenant": " "}}}}}`,
			[]string{"mcpServers.x.headers_from_context.headers.X-Tenant"}, "headers_from_context.headers['X-Tenant'] must name a non-blank secret key from config.context.secrets"},
		{"headers_from_context two spellings", `{"mcpServers": {"x": {"type": "http", "url": "u", "headers_from_context": {"headers": {"X-Tenant": "a", "x-tenant": "b"}}}}}`,
			[]string{"mcpServers.x.headers_from_context.headers"}, "two spellings"},
		{"headers_from_context on_missing", `{"mcpServers": {"x": {"type": "http", "url": "u", "headers_from_context": {"on_missing": "ignore"}}}}`,
			[]string{"mcpServers.x.headers_from_context.on_missing"}, ""},
		{"max_result_bytes zero", `{"mcpServers": {"x": {"command": "c", "max_result_bytes": 0}}}`, []string{"mcpServers.x.max_result_bytes"}, "whole number of bytes"},
		{"max_result_bytes fraction", `{"mcpServers": {"x": {"command": "c", "max_result_bytes": 1.5}}}`, []string{"mcpServers.x.max_result_bytes"}, "whole number of bytes"},
		{"max_result_bytes too big", `{"mcpServers": {"x": {"command": "c", "max_result_bytes": 1e15}}}`, []string{"mcpServers.x.max_result_bytes"}, "whole number of bytes"},
		{"max_result_bytes string", `{"mcpServers": {"x": {"command": "c", "max_result_bytes": "16MiB"}}}`, []string{"mcpServers.x.max_result_bytes"}, "must be a number"},
		{"protocol_version not a date", `{"mcpServers": {"x": {"command": "c", "protocol_version": "latest"}}}`, []string{"mcpServers.x.protocol_version"}, ""},
		{"spec_tasks unknown value", `{"mcpServers": {"x": {"command": "c", "spec_tasks": "on"}}}`, []string{"mcpServers.x.spec_tasks"}, `must be one of "auto", "off", got "on"`},
		{"tool_catalog unknown value", `{"mcpServers": {"x": {"command": "c", "tool_catalog": "block"}}}`, []string{"mcpServers.x.tool_catalog"}, `must be one of "warn", "hold", "off", got "block"`},
		{"spec_tasks not a string", `{"mcpServers": {"x": {"command": "c", "spec_tasks": false}}}`, []string{"mcpServers.x.spec_tasks"}, "must be a string"},
		{"spec_task_ttl_seconds zero", `{"mcpServers": {"x": {"command": "c", "spec_task_ttl_seconds": 0}}}`, []string{"mcpServers.x.spec_task_ttl_seconds"}, "omit it for the server's default"},
		{"spec_task_ttl_seconds negative", `{"mcpServers": {"x": {"command": "c", "spec_task_ttl_seconds": -5}}}`, []string{"mcpServers.x.spec_task_ttl_seconds"}, "must not be negative"},
		{"spec_task_ttl_seconds a string", `{"mcpServers": {"x": {"command": "c", "spec_task_ttl_seconds": "60"}}}`, []string{"mcpServers.x.spec_task_ttl_seconds"}, "must be a number"},
		{"skills entry enabled not a boolean", `{"skills": {"writer": {"enabled": 1}}}`, []string{"skills.writer.enabled"}, ""},
		{"middlewares not a list", `{"middlewares": "a:B"}`, []string{"middlewares"}, ""},
		{"snake-case servers are validated too", `{"mcp_servers": {"x": {"command": 3}}}`, []string{"mcp_servers.x.command"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext, err := config.Parse([]byte(tt.doc), noEnv)
			if err == nil {
				t.Fatalf("Parse succeeded; want problems at %v", tt.paths)
			}
			if ext != nil {
				t.Errorf("Parse returned a configuration together with problems")
			}
			p := problemsOf(t, err)
			equal(t, "paths", problemPaths(p), tt.paths)
			if tt.message != "" && !strings.Contains(p[0].Message, tt.message) {
				t.Errorf("message %q does not contain %q", p[0].Message, tt.message)
			}
			// The error text names the field.
			if !strings.Contains(err.Error(), tt.paths[0]) {
				t.Errorf("error %q does not name %q", err.Error(), tt.paths[0])
			}
		})
	}
}

// TestParseReportsEveryProblem checks that Parse does not stop at the first
// problem: `antler config validate` prints the whole list at once.
func TestParseReportsEveryProblem(t *testing.T) {
	doc := `{
	  "mcpServers": {
	    "a": {"command": "c", "args": [1, "ok", false], "routing": {"mode": "sometimes", "boost": 1}},
	    "b": {"type": "http", "url": "u", "headers": {"X-K": "1", "x-k": "2"}, "tool_call_timeout": -3,
	          "oauth": {}, "user_auth": {"header": ""}},
	    "c": {"type": "http", "url": "u", "task_toolsets": [{"name": "t", "submit_tool": "go", "status_tool": "go", "cancel_tool": "x", "y": 1}]}
	  },
	  "skills": {"s": []}
	}`
	_, err := config.Parse([]byte(doc), noEnv)
	p := problemsOf(t, err)
	equal(t, "paths", problemPaths(p), []string{
		"mcpServers.a.args[0]",
		"mcpServers.a.args[2]",
		"mcpServers.a.routing.boost",
		"mcpServers.a.routing.mode",
		"mcpServers.b.headers",
		"mcpServers.b.tool_call_timeout",
		"mcpServers.b.oauth.token_url",
		"mcpServers.b.user_auth.header",
		"mcpServers.c.task_toolsets[0].y",
		"mcpServers.c.task_toolsets[0].status_tool",
		"skills.s",
	})
	msg := err.Error()
	if !strings.HasPrefix(msg, "11 problems:") {
		t.Errorf("error text starts %q, want a count of 11", strings.SplitN(msg, "\n", 2)[0])
	}
	for _, e := range p {
		if !strings.Contains(msg, e.Error()) {
			t.Errorf("error text misses %q", e.Error())
		}
	}
}

func TestProblemsError(t *testing.T) {
	tests := []struct {
		p    config.Problems
		want string
	}{
		{nil, "no problems"},
		{config.Problems{{Path: "a.b", Message: "bad"}}, "a.b: bad"},
		{config.Problems{{Path: "", Message: "whole document"}}, "whole document"},
		{config.Problems{{Path: "a", Message: "x"}, {Path: "b", Message: "y"}}, "2 problems:\n  a: x\n  b: y"},
	}
	for _, tt := range tests {
		equal(t, "Error()", tt.p.Error(), tt.want)
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  []byte
	}{
		{"empty input", []byte("")},
		{"truncated", []byte(`{"mcpServers": {`)},
		{"trailing data", []byte(`{} {}`)},
		{"trailing comma", []byte(`{"a": 1,}`)},
		{"not UTF-8", []byte("{\"mcpServers\": {\"x\": {\"command\": \"\xff\"}}}")},
		{"too deep", []byte(strings.Repeat("[", 300) + strings.Repeat("]", 300))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext, err := config.Parse(tt.doc, noEnv)
			var syn *config.SyntaxError
			if !errors.As(err, &syn) {
				t.Fatalf("err = %v (%T), want *config.SyntaxError", err, err)
			}
			if ext != nil {
				t.Error("Parse returned a configuration for a syntax error")
			}
			if !strings.HasPrefix(err.Error(), "not valid JSON: ") {
				t.Errorf("message %q", err.Error())
			}
		})
	}
}

// TestServerProblems covers DeerFlow's build_server_params errors: the
// server is skipped and reported, the file still loads and the other
// servers are served.
func TestServerProblems(t *testing.T) {
	tests := []struct {
		name    string
		server  string
		path    string
		message string
	}{
		{"unsupported type", `{"type": "websocket", "url": "ws://x"}`, "mcpServers.bad.type", `MCP server 'bad' has unsupported transport type: "websocket"`},
		{"unsupported transport alias", `{"transport": "grpc", "url": "x"}`, "mcpServers.bad.transport", `MCP server 'bad' has unsupported transport type: "grpc"`},
		{"unsupported type from a variable names the variable", `{"type": "$KIND"}`, "mcpServers.bad.type", "MCP server 'bad' has unsupported transport type: the value of $KIND"},
		{"stdio without command", `{"type": "stdio", "args": ["x"]}`, "mcpServers.bad.command", "MCP server 'bad' with stdio transport requires 'command' field"},
		{"default stdio without command", `{}`, "mcpServers.bad.command", "MCP server 'bad' with stdio transport requires 'command' field"},
		{"stdio with null command", `{"command": null}`, "mcpServers.bad.command", "MCP server 'bad' with stdio transport requires 'command' field"},
		{"stdio command from an unset variable", `{"command": "$NO_SUCH_COMMAND"}`, "mcpServers.bad.command", "MCP server 'bad' with stdio transport requires 'command' field"},
		{"http without url", `{"type": "http"}`, "mcpServers.bad.url", "MCP server 'bad' with http transport requires 'url' field"},
		{"sse without url", `{"type": "sse", "command": "c"}`, "mcpServers.bad.url", "MCP server 'bad' with sse transport requires 'url' field"},
		{"http with empty url", `{"transport": "http", "url": ""}`, "mcpServers.bad.url", "MCP server 'bad' with http transport requires 'url' field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"mcpServers": {"first": {"command": "ok"}, "bad": ` + tt.server + `, "last": {"type": "http", "url": "https://ok"}}}`
			ext := mustParse(t, []byte(doc), env(map[string]string{"KIND": "carrier-pigeon"}))
			equal(t, "servers", serverNames(ext.Servers), []string{"first", "bad", "last"})
			bad := mustServer(t, ext, "bad")
			if bad.Problem == nil {
				t.Fatal("bad server has no Problem")
			}
			equal(t, "Problem.Path", bad.Problem.Path, tt.path)
			equal(t, "Problem.Message", bad.Problem.Message, tt.message)
			equal(t, "Problem.Error()", bad.Problem.Error(), tt.path+": "+tt.message)
			equal(t, "first.Problem", mustServer(t, ext, "first").Problem, (*config.FieldError)(nil))
			equal(t, "last.Problem", mustServer(t, ext, "last").Problem, (*config.FieldError)(nil))
			if strings.Contains(bad.Problem.Message, "carrier-pigeon") {
				t.Errorf("problem shows a resolved variable: %q", bad.Problem.Message)
			}
		})
	}
}

// TestCredentialBlocksOnStdioWarn checks that per-user credentials on a stdio
// server are reported as ignored (they apply to HTTP/SSE only).
func TestCredentialBlocksOnStdioWarn(t *testing.T) {
	tests := []struct {
		name  string
		block string
		warn  []string
	}{
		{"user_auth", `"user_auth": {"users": {"a": "b"}}`, []string{"mcpServers.fs.user_auth: MCP server 'fs' declares user_auth but uses the 'stdio' transport; user-scoped credentials only apply to 'sse'/'http' servers — ignoring user_auth for this server"}},
		{"headers_from_context", `"headers_from_context": {"headers": {"X-A": "a"}}`, []string{"mcpServers.fs.headers_from_context: MCP server 'fs' declares headers_from_context but uses the 'stdio' transport; request-scoped headers only apply to 'sse'/'http' servers — ignoring headers_from_context for this server"}},
		{"disabled user_auth", `"user_auth": {"enabled": false}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext := mustParse(t, []byte(`{"mcpServers": {"fs": {"command": "c", `+tt.block+`}}}`), noEnv)
			equal(t, "warnings", ext.Warnings, tt.warn)
		})
	}
}

// TestInterceptors: mcpInterceptors may be a list or a single string; any
// other value is ignored with a warning, not an error, as in DeerFlow.
func TestInterceptors(t *testing.T) {
	tests := []struct {
		name     string
		value    string // JSON, "" for absent
		want     []string
		warnings []string
	}{
		{"absent", "", nil, nil},
		{"null", `null`, nil, nil},
		{"list", `["a.b:c", "d.e:f"]`, []string{"a.b:c", "d.e:f"}, nil},
		{"single string", `"a.b:c"`, []string{"a.b:c"}, nil},
		{"empty list", `[]`, nil, nil},
		{"number", `42`, nil, []string{"mcpInterceptors: must be a list of strings, got a number; skipping"}},
		{"object", `{"a": "b"}`, nil, []string{"mcpInterceptors: must be a list of strings, got an object; skipping"}},
		{"boolean", `true`, nil, []string{"mcpInterceptors: must be a list of strings, got a boolean; skipping"}},
		{"list with a non-string", `["a:b", 7, "c:d"]`, []string{"a:b", "c:d"}, []string{"mcpInterceptors[1]: must be a string or an object, got a number; skipping"}},
		{"variable", `"$INTERCEPTOR"`, []string{"pkg.mod:build"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{}`
			if tt.value != "" {
				doc = `{"mcpInterceptors": ` + tt.value + `}`
			}
			ext := mustParse(t, []byte(doc), env(map[string]string{"INTERCEPTOR": "pkg.mod:build"}))
			equal(t, "Interceptors", ext.Interceptors, tt.want)
			equal(t, "Warnings", ext.Warnings, tt.warnings)
		})
	}
}
