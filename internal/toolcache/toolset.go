package toolcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/interceptor"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/routing"
	"github.com/antler-mcp/antler/internal/sessionpool"
	"github.com/antler-mcp/antler/internal/tracing"
	"github.com/antler-mcp/antler/internal/upstream"
)

// ErrUnknownTool is returned for a name that no server exposes.
var ErrUnknownTool = errors.New("unknown tool")

// ErrUnknownServer is returned by CallServerTool and Send for a server that
// is not connected.
var ErrUnknownServer = errors.New("unknown or unavailable MCP server")

// validToolName is DeerFlow's rule for exposed names: anything else could
// forge prompt structure when the name is shown to a model.
var validToolName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Tool is one tool as agents see it.
type Tool struct {
	Name         string          `json:"name"`
	Server       string          `json:"server"`
	OriginalName string          `json:"original_name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Routing is the tool's effective routing, present when its mode is not "off".
	Routing *config.Routing `json:"routing,omitempty"`
	// TaskToolset is set on a durable task's submit tool: calling it submits
	// a background task and returns its local id.
	TaskToolset *config.TaskToolset `json:"task_toolset,omitempty"`
	// TaskSupport is the tool's execution.taskSupport ("optional" or
	// "required") when its server runs it as an MCP task (2025-11-25) and
	// Antler runs it as a durable task; "" otherwise.
	TaskSupport string `json:"task_support,omitempty"`
	// TaskTTL is the ttl asked for such a tool's tasks (the server's
	// spec_task_ttl_seconds; zero: the server's default).
	TaskTTL time.Duration `json:"-"`
	// TaskExtension is set when the tool's server speaks 2026-07-28 and
	// declared the tasks extension (io.modelcontextprotocol/tasks), and
	// Antler runs its calls as durable tasks: the server decides per call
	// whether to answer with a task.
	TaskExtension bool `json:"task_extension,omitempty"`
	// ServerDriver is set on such an MCP task tool (TaskSupport or
	// TaskExtension) when its server names a plugin task driver
	// (mcpServers.<name>.driver): the plugin runs its tasks instead of the
	// built-in spec driver.
	ServerDriver bool `json:"-"`
}

// IsDurable reports whether calling the tool submits a durable task (a
// task_toolsets submit tool, or a tool its server runs as an MCP task, in
// either revision's dialect).
func (t Tool) IsDurable() bool { return t.TaskToolset != nil || t.TaskSupport != "" || t.TaskExtension }

// Server states reported on /api/mcp/servers.
const (
	StateConnected = "connected"
	StateFailed    = "failed"
)

// Conflict is a tool hidden because another tool already had its exposed name.
type Conflict struct {
	Tool     string `json:"tool"`      // the upstream's own name
	Name     string `json:"name"`      // the exposed name both wanted
	KeptFrom string `json:"kept_from"` // the server whose tool kept the name
}

// ServerStatus is one enabled server's discovery outcome.
type ServerStatus struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	State     string `json:"state"`
	Error     string `json:"error,omitempty"`
	// PublicError is Error as non-admins see it: the kind of failure,
	// without the host paths, binaries or URLs a process error names.
	PublicError     string     `json:"-"`
	Tools           int        `json:"tools"`
	ProtocolVersion string     `json:"protocol_version,omitempty"`
	Conflicts       []Conflict `json:"conflicts,omitempty"`
	// InvalidNames counts upstream tools dropped for names outside [A-Za-z0-9_-].
	InvalidNames int `json:"invalid_names,omitempty"`
	// Sessions is the number of pooled stdio sessions (one per user thread).
	Sessions int `json:"sessions"`
	// CatalogDrifted names the tools whose definitions differ from the
	// approved tool catalog; CatalogHeld those of them not served
	// (tool_catalog hold).
	CatalogDrifted []string `json:"catalog_drifted,omitempty"`
	CatalogHeld    []string `json:"catalog_held,omitempty"`
}

// ToolSet is one published discovery: the tools, the servers' status and the
// live connections behind them. It is immutable once published.
type ToolSet struct {
	Generation   uint64
	ConfigPath   string
	DiscoveredAt time.Time
	Tools        []Tool
	Servers      []ServerStatus
	Warnings     []string
	// TaskFreeze fingerprints the task-enabled servers this tool set was
	// built from (see config.TaskFreeze).
	TaskFreeze config.TaskFreeze
	// TaskDrivers are the plugin task drivers the enabled servers' task
	// toolsets name, whether or not their servers connected.
	TaskDrivers []config.TaskDriverSpec

	byName    map[string]int
	endpoints map[string]*dispatch.Endpoint
	// chain is every tool call's: the credential layers and the plugins.
	chain []interceptor.Interceptor
	// background is the chain without per-request credentials, for durable
	// task polls made outside any agent request.
	background []interceptor.Interceptor
	// credentials is the chain of every other method: the built-in
	// credential layers alone (see credential.Layers).
	credentials []interceptor.Interceptor
	plugins     []*plugins.Plugin
	pool        *sessionpool.Pool[*upstream.Conn]
	slices      map[string][]byte // stdio servers' settings, to retire changed ones
	log         *slog.Logger
	tracer      *tracing.Tracer
}

// Tracer is the tracer of the calls the tool set routes, for the doors'
// spans; nil when tracing is off.
func (s *ToolSet) Tracer() *tracing.Tracer { return s.tracer }

// RoutingHints returns the set's routing hints (tools whose routing is
// "prefer" with keywords, the deferred ones excluded) and the system-prompt
// section rendering them; hints is never nil.
func (s *ToolSet) RoutingHints(deferred map[string]bool) (section string, hints []routing.Hint) {
	entries := make([]routing.Entry, 0, len(s.Tools))
	for _, t := range s.Tools {
		if t.Routing != nil {
			entries = append(entries, routing.Entry{Name: t.Name, Routing: *t.Routing})
		}
	}
	if hints = routing.Hints(entries, deferred); hints == nil {
		hints = []routing.Hint{}
	}
	return routing.Render(hints), hints
}

// Tool returns the tool exposed as name.
func (s *ToolSet) Tool(name string) (Tool, bool) {
	i, ok := s.byName[name]
	if !ok {
		return Tool{}, false
	}
	return s.Tools[i], true
}

// ConnectedServers returns the connected servers' configurations in configuration
// order: the doors that aggregate more than tools (resources, prompts) list
// and route through them as the tool list does.
func (s *ToolSet) ConnectedServers() []*config.Server {
	var out []*config.Server
	for _, st := range s.Servers {
		if ep, ok := s.endpoints[st.Name]; ok {
			out = append(out, ep.Server())
		}
	}
	return out
}

// ServerStatuses returns the servers' status with their current session counts.
func (s *ToolSet) ServerStatuses() []ServerStatus {
	out := make([]ServerStatus, len(s.Servers))
	copy(out, s.Servers)
	if s.pool != nil {
		counts := s.pool.Counts()
		for i := range out {
			out[i].Sessions = counts[out[i].Name]
		}
	}
	return out
}

// Call calls a tool with arguments only (no identity or secrets).
func (s *ToolSet) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return s.Invoke(ctx, dispatch.Request{Name: name, Arguments: args})
}

// CallServerTool calls a server's tool by its raw (upstream) name, as durable
// task drivers do for their submit, status and cancel tools, which agents do
// not see; req.Name is ignored. requestScoped selects the full chain (a
// submit made inside an agent's request); without it per-request
// credentials are not applied. An unconnected server is
// ErrUnknownServer.
func (s *ToolSet) CallServerTool(ctx context.Context, server, tool string, req dispatch.Request, requestScoped bool) (json.RawMessage, error) {
	ep, ok := s.endpoints[server]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownServer, server)
	}
	chain := s.background
	if requestScoped {
		chain = s.chain
	}
	return ep.Call(ctx, chain, tool, ep.Server().ExposedName(tool), req)
}

// Invoke routes a tool call through the interceptor chain to the server the
// tool came from (never chosen by its name) and returns the raw
// CallToolResult; req.Method and req.Params are not read (Send serves other
// methods). A name no server exposes is ErrUnknownTool; every other
// failure, denials included, is *dispatch.CallError.
func (s *ToolSet) Invoke(ctx context.Context, req dispatch.Request) (json.RawMessage, error) {
	t, ok := s.Tool(req.Name)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTool, req.Name)
	}
	return s.endpoints[t.Server].Call(ctx, s.chain, t.OriginalName, t.Name, req)
}

// Send runs a non-tool request (req.Method, req.Params) on server's
// connection, for stdio the caller's pooled (user, thread) session, after
// the built-in credential layers (custom interceptors see tool calls only).
// A nil op sends req.Method with req.Params. An unconnected server is
// ErrUnknownServer; every other failure is *dispatch.CallError.
func (s *ToolSet) Send(ctx context.Context, server string, req dispatch.Request, op dispatch.Op) (json.RawMessage, error) {
	ep, ok := s.endpoints[server]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownServer, server)
	}
	return ep.Send(ctx, s.credentials, req, op)
}

func (s *ToolSet) close() {
	var wg sync.WaitGroup
	for _, ep := range s.endpoints {
		wg.Go(ep.Close)
	}
	wg.Wait()
	for _, p := range s.plugins {
		p.Close()
	}
}
