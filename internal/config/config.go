// Package config reads extensions_config.json, DeerFlow's MCP configuration
// file, field for field: defaults, the transport alias, whole-string $VAR
// substitution, routing validation and clamping, task_toolsets and header
// spelling rules, timeouts, and unknown keys kept for the round trip.
//
// Loading never stops at the first problem: Parse returns every problem with
// the path of its field, so `antler config validate` can print them all.
package config

import (
	"encoding/json"
	"strings"
	"time"
)

// Transport names accepted in a server's "type" (or its alias "transport").
const (
	TransportStdio = "stdio"
	TransportSSE   = "sse"
	TransportHTTP  = "http"
)

// DefaultSessionInitTimeout bounds connect + initialize + tools/list when a
// server does not set session_init_timeout (DeerFlow's
// DEFAULT_MCP_SESSION_INIT_TIMEOUT).
const DefaultSessionInitTimeout = 60 * time.Second

// Routing modes.
const (
	RoutingOff    = "off"
	RoutingPrefer = "prefer"
)

// On-missing policies of user_auth and headers_from_context.
const (
	OnMissingDeny        = "deny"
	OnMissingPassthrough = "passthrough"
)

// OAuth grant types.
const (
	GrantClientCredentials = "client_credentials"
	GrantRefreshToken      = "refresh_token"
)

// Pair is one entry of a string map whose order matters (env, headers).
type Pair struct {
	Key   string
	Value string
}

// Pairs is an ordered string map.
type Pairs []Pair

// Get returns the value under key (exact spelling).
func (p Pairs) Get(key string) (string, bool) {
	for _, e := range p {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}

// Map returns the pairs as a map.
func (p Pairs) Map() map[string]string {
	m := make(map[string]string, len(p))
	for _, e := range p {
		m[e.Key] = e.Value
	}
	return m
}

// Extensions is a parsed extensions_config.json.
type Extensions struct {
	// Servers in declaration order, disabled ones included.
	Servers []*Server
	// Interceptors are the mcpInterceptors entries, a bare string counted as a
	// one-element list.
	Interceptors []string
	// InterceptorSpecs are all mcpInterceptors entries in file order, strings
	// ("wasm:<path>", "process:<path>", DeerFlow's "module:attr") and objects
	// alike, as resolved JSON for the plugin loader.
	InterceptorSpecs []InterceptorSpec
	// Dir is the folder of the file the configuration was read from ("" when
	// parsed from memory); plugin paths resolve against it.
	Dir string
	// Middlewares are lead-agent middleware paths (not MCP; kept for the round trip).
	Middlewares []string
	// Raw is the document as written, before $VAR substitution. Writers work
	// on it so placeholders survive; it is never logged.
	Raw *Object
	// Warnings are problems that were corrected or ignored (a clamped
	// priority, an ignored mcpInterceptors value); they name fields, never values.
	Warnings []string

	resolved *Object
}

// Enabled returns the enabled servers in declaration order.
func (e *Extensions) Enabled() []*Server {
	if e == nil {
		return nil
	}
	out := make([]*Server, 0, len(e.Servers))
	for _, s := range e.Servers {
		if s.Enabled {
			out = append(out, s)
		}
	}
	return out
}

// Server returns the server named name.
func (e *Extensions) Server(name string) (*Server, bool) {
	if e == nil {
		return nil, false
	}
	for _, s := range e.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// InterceptorSpec is one mcpInterceptors entry.
type InterceptorSpec struct {
	Path string          // field path, e.g. mcpInterceptors[2]
	JSON json.RawMessage // the entry after $VAR substitution
}

// Server is one entry of mcpServers.
type Server struct {
	Name               string
	Enabled            bool
	Type               string // normalised: "type", else the "transport" alias, else stdio
	Command            string
	Args               []string
	Env                Pairs
	URL                string
	Headers            Pairs
	Cwd                string
	OAuth              *OAuth
	UserAuth           *UserAuth
	HeadersFromContext *ContextHeaders
	Description        string
	Routing            Routing
	Tools              map[string]ToolOverride
	ToolNamePrefix     bool
	// ToolCallTimeout bounds one tools/call; zero means no bound.
	ToolCallTimeout time.Duration
	// SessionInitTimeout bounds connect + initialize + tools/list; zero means no bound.
	SessionInitTimeout time.Duration
	TaskToolsets       []TaskToolset
	// SpecTasks is SpecTasksAuto (the default, also for "") or
	// SpecTasksOff: whether tools the server runs as MCP tasks (2025-11-25
	// execution.taskSupport) become durable tasks (Antler extension).
	SpecTasks string
	// Driver names a plugin task driver for the server's MCP task tools
	// (mcpServers.<name>.driver, Antler extension), in a task toolset
	// driver's shapes: it replaces the built-in spec task drivers for them.
	// nil keeps the built-in ones. It is validated JSON.
	Driver json.RawMessage
	// SpecTaskTTL is the ttl asked of the server for each such task; zero
	// leaves it to the server (Antler extension).
	SpecTaskTTL time.Duration
	// ToolCatalog is what a discovery does when the server's tools differ
	// from the approved catalog (Antler extension): ToolCatalogWarn (the
	// default, also for ""), ToolCatalogHold or ToolCatalogOff.
	ToolCatalog string
	// ProtocolVersion pins the MCP revision to negotiate (Antler extension);
	// empty lets the client negotiate the newest both sides speak.
	ProtocolVersion string
	// MaxResultBytes bounds one message from the server, a tool result
	// included (Antler extension); zero means the host's default.
	MaxResultBytes int64
	// Extra holds unknown keys (after $VAR substitution), kept for the round trip.
	Extra *Object

	// Problem is set when this server cannot be started (unsupported
	// transport, missing command or url): the server is skipped and reported,
	// the others are served.
	Problem *FieldError

	// slice is the canonical JSON of this server's effective settings, used
	// to decide whether a config edit touched MCP at all.
	slice []byte
}

// The values of a server's spec_tasks.
const (
	SpecTasksAuto = "auto"
	SpecTasksOff  = "off"
)

// The values of a server's tool_catalog.
const (
	// ToolCatalogWarn serves changed and new tools, records them pending
	// and reports the drift.
	ToolCatalogWarn = "warn"
	// ToolCatalogHold serves only approved definitions: changed and new
	// tools are hidden until an admin approves them.
	ToolCatalogHold = "hold"
	// ToolCatalogOff records nothing.
	ToolCatalogOff = "off"
)

// CatalogPolicy is the server's tool_catalog, ToolCatalogWarn when unset.
func (s *Server) CatalogPolicy() string {
	if s.ToolCatalog == "" {
		return ToolCatalogWarn
	}
	return s.ToolCatalog
}

// SpecTasksEnabled reports whether the server's MCP task tools run as
// durable tasks (spec_tasks is not "off").
func (s *Server) SpecTasksEnabled() bool { return s.SpecTasks != SpecTasksOff }

// Routing is a server's or a tool's routing hint configuration.
type Routing struct {
	Mode     string   `json:"mode"`
	Priority int      `json:"priority"`
	Keywords []string `json:"keywords"`
}

// RoutingOverride is a per-tool routing block; nil fields were not set and
// are inherited from the server.
type RoutingOverride struct {
	Mode     *string
	Priority *int
	Keywords *[]string
}

// ToolOverride is an entry of a server's "tools" map.
type ToolOverride struct {
	Routing *RoutingOverride
	Extra   *Object
}

// EffectiveRouting returns the routing of the tool named original (the
// upstream's own, un-prefixed name): the server's routing with only the
// fields the tool's override sets explicitly laid over it.
func (s *Server) EffectiveRouting(original string) Routing {
	r := s.Routing
	r.Keywords = append([]string(nil), s.Routing.Keywords...)
	ov, ok := s.Tools[original]
	if !ok || ov.Routing == nil {
		return r
	}
	if ov.Routing.Mode != nil {
		r.Mode = *ov.Routing.Mode
	}
	if ov.Routing.Priority != nil {
		r.Priority = *ov.Routing.Priority
	}
	if ov.Routing.Keywords != nil {
		r.Keywords = append([]string(nil), (*ov.Routing.Keywords)...)
	}
	return r
}

// OAuth is a server's token-endpoint configuration.
type OAuth struct {
	Enabled            bool
	TokenURL           string
	GrantType          string
	ClientID           string
	ClientSecret       string
	RefreshToken       string
	Scope              string
	Audience           string
	TokenField         string
	TokenTypeField     string
	ExpiresInField     string
	DefaultTokenType   string
	RefreshSkewSeconds int
	ExtraTokenParams   Pairs
	Extra              *Object
}

// UserAuth injects a per-user credential header.
type UserAuth struct {
	Enabled   bool
	Header    string
	Users     Pairs
	OnMissing string
	Extra     *Object
}

// ContextHeaders maps HTTP headers to keys of a call's secrets.
type ContextHeaders struct {
	Enabled   bool
	Headers   Pairs // header name → secret key
	OnMissing string
	Extra     *Object
}

// TaskToolset binds a server's raw submit/status/cancel tools into a durable task.
// RespondTool, optional, is the tool that passes a user's answer to a task
// waiting for input ("" when the toolset's tasks cannot take answers).
type TaskToolset struct {
	Name        string `json:"name"`
	SubmitTool  string `json:"submit_tool"`
	StatusTool  string `json:"status_tool"`
	CancelTool  string `json:"cancel_tool"`
	RespondTool string `json:"respond_tool,omitempty"`
	// Driver names a plugin task driver for this toolset, as an
	// mcpInterceptors entry ("wasm:<path>", "process:<path>" or an object);
	// nil keeps the built-in ordinary-tools driver. It is validated JSON.
	// Never encoded: the toolset is shown to every principal with its submit
	// tool, and the driver's config holds $VAR values already resolved and
	// its path is the host's.
	Driver json.RawMessage `json:"-"`
}

// TaskDriverSpec is one plugin task driver, as configured: a task
// toolset's, or (Toolset "") a server's for its MCP task tools.
type TaskDriverSpec struct {
	Server  string
	Toolset string
	// Field is the entry's path in the file, for messages
	// (mcpServers.jobs.task_toolsets[0].driver, mcpServers.jobs.driver).
	Field string
	JSON  json.RawMessage
	// Dir resolves a relative plugin path: the configuration file's folder.
	Dir string
}

// TaskDrivers lists the plugin drivers of the enabled servers (each
// server's own driver, then its task toolsets'), in file order.
func (e *Extensions) TaskDrivers() []TaskDriverSpec {
	if e == nil {
		return nil
	}
	var out []TaskDriverSpec
	for _, s := range e.Enabled() {
		if len(s.Driver) > 0 {
			out = append(out, TaskDriverSpec{Server: s.Name, JSON: s.Driver, Dir: e.Dir, Field: joinPath(joinPath("mcpServers", s.Name), "driver")})
		}
		for i, ts := range s.TaskToolsets {
			if len(ts.Driver) == 0 {
				continue
			}
			out = append(out, TaskDriverSpec{Server: s.Name, Toolset: ts.Name, JSON: ts.Driver, Dir: e.Dir,
				Field: joinPath(indexPath(joinPath(joinPath("mcpServers", s.Name), "task_toolsets"), i), "driver")})
		}
	}
	return out
}

// IsStdio reports whether the server runs as a child process.
func (s *Server) IsStdio() bool { return s.Type == TransportStdio }

// ExposedName is the name agents see for the upstream tool named original.
func (s *Server) ExposedName(original string) string {
	if s.ToolNamePrefix {
		return s.Name + "_" + original
	}
	return original
}

// OriginalName strips the "<server>_" prefix from an exposed name when the
// server prefixes its tools; an unprefixed server's names are kept whole.
func (s *Server) OriginalName(exposed string) string {
	if s.ToolNamePrefix {
		if rest, ok := strings.CutPrefix(exposed, s.Name+"_"); ok {
			return rest
		}
	}
	return exposed
}
