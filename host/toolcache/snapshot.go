package toolcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/antler-mcp/antler/host/config"
	"github.com/antler-mcp/antler/host/interceptor"
	"github.com/antler-mcp/antler/host/sessionpool"
	"github.com/antler-mcp/antler/host/upstream"
	"github.com/antler-mcp/antler/host/virtualpath"
	"github.com/antler-mcp/antler/host/workspace"
	"github.com/antler-mcp/antler/plugins"
)

// ErrUnknownTool is returned for a name that no server exposes.
var ErrUnknownTool = errors.New("unknown tool")

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
}

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
}

// Snapshot is one published discovery: the tools, the servers' status and the
// live connections behind them. It is immutable once published.
type Snapshot struct {
	Generation   uint64
	ConfigPath   string
	DiscoveredAt time.Time
	Tools        []Tool
	Servers      []ServerStatus
	Warnings     []string
	// TaskFreeze fingerprints the task-enabled servers this snapshot was
	// built from (see config.TaskFreeze).
	TaskFreeze config.TaskFreeze

	byName    map[string]int
	endpoints map[string]*endpoint
	chain     []interceptor.Interceptor
	// background is the chain without per-request credentials, for durable
	// task polls made outside any agent request.
	background []interceptor.Interceptor
	plugins    []*plugins.Plugin
	pool       *sessionpool.Pool[*upstream.Conn]
	slices     map[string][]byte // stdio servers' settings, to retire changed ones
	log        *slog.Logger
}

// Tool returns the tool exposed as name.
func (s *Snapshot) Tool(name string) (Tool, bool) {
	i, ok := s.byName[name]
	if !ok {
		return Tool{}, false
	}
	return s.Tools[i], true
}

// ServerStatuses returns the servers' status with their current session counts.
func (s *Snapshot) ServerStatuses() []ServerStatus {
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

// CallRequest is one tool call as the gateway received it.
type CallRequest struct {
	Name      string // exposed name
	Arguments json.RawMessage
	UserID    string
	ThreadID  string
	Secrets   map[string]string
}

// Call calls a tool with arguments only (no identity or secrets).
func (s *Snapshot) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	return s.Invoke(ctx, CallRequest{Name: name, Arguments: args})
}

// ErrUnknownServer is returned by CallServerTool for a server that is not
// connected.
var ErrUnknownServer = errors.New("unknown or unavailable MCP server")

// CallServerTool calls a server's tool by its raw (upstream) name, as durable
// task drivers do for their submit, status and cancel tools, which agents do
// not see. requestScoped selects the full chain (a submit made inside an
// agent's request); without it per-request credentials are not applied.
func (s *Snapshot) CallServerTool(ctx context.Context, server, tool string, args json.RawMessage, userID, threadID string, secrets map[string]string, requestScoped bool) (json.RawMessage, error) {
	ep, ok := s.endpoints[server]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownServer, server)
	}
	chain := s.background
	if requestScoped {
		chain = s.chain
	}
	return s.invoke(ctx, ep, chain, tool, ep.server.ExposedName(tool), CallRequest{Arguments: args, UserID: userID, ThreadID: threadID, Secrets: secrets})
}

// Invoke routes a call through the interceptor chain to the server the tool
// came from (never chosen by its name) and returns the raw CallToolResult.
// Failures, denials included, are *CallError.
func (s *Snapshot) Invoke(ctx context.Context, call CallRequest) (json.RawMessage, error) {
	t, ok := s.Tool(call.Name)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTool, call.Name)
	}
	return s.invoke(ctx, s.endpoints[t.Server], s.chain, t.OriginalName, t.Name, call)
}

func (s *Snapshot) invoke(ctx context.Context, ep *endpoint, chain []interceptor.Interceptor, tool, exposed string, call CallRequest) (json.RawMessage, error) {
	req := &interceptor.Request{
		Server:      ep.server,
		Tool:        tool,
		ExposedName: exposed,
		Arguments:   call.Arguments,
		Headers:     ep.initialHeaders(),
		UserID:      call.UserID,
		ThreadID:    call.ThreadID,
		Secrets:     call.Secrets,
	}
	raw, err := interceptor.Chain(ep.call, chain...)(ctx, req)
	if err == nil {
		return raw, nil
	}
	if d, ok := interceptor.IsDenied(err); ok {
		return nil, &CallError{Server: ep.server.Name, Tool: tool, Denied: true, Message: d.Message, Err: err}
	}
	var ce *CallError
	if errors.As(err, &ce) {
		return nil, ce
	}
	if ctx.Err() != nil {
		return nil, &CallError{Server: ep.server.Name, Tool: tool, Err: ctx.Err(),
			Message: fmt.Sprintf("MCP tool '%s' on server '%s' was cancelled", tool, ep.server.Name)}
	}
	s.log.Warn("interceptor failed", "server", ep.server.Name, "tool", tool, "error", Redact(err.Error()))
	return nil, &CallError{Server: ep.server.Name, Tool: tool, Err: err,
		Message: fmt.Sprintf("MCP tool '%s' on server '%s' failed", tool, ep.server.Name)}
}

func (s *Snapshot) close() {
	var wg sync.WaitGroup
	for _, ep := range s.endpoints {
		wg.Go(ep.close)
	}
	wg.Wait()
	for _, p := range s.plugins {
		p.Close()
	}
}

// CallError is a failed tool call. Message is safe to show to a model: it
// names the server and tool and never carries a credential or a URL.
type CallError struct {
	Server  string
	Tool    string
	Timeout bool
	Denied  bool // an interceptor refused the call
	Message string
	Err     error
}

func (e *CallError) Error() string { return e.Message }
func (e *CallError) Unwrap() error { return e.Err }

// endpoint is a server's connection, re-dialled after it dies.
type endpoint struct {
	server *config.Server
	opts   upstream.Options
	log    *slog.Logger
	// pool holds stdio sessions per (server, user:thread); dataDir roots
	// their workspaces ("" leaves the child's working directory alone).
	pool    *sessionpool.Pool[*upstream.Conn]
	dataDir string
	version string // digest of the server's settings, part of the session key

	mu     sync.Mutex
	conn   *upstream.Conn // HTTP and SSE: one connection for every caller
	closed bool
}

// initialHeaders are the headers a call starts from before the chain: the
// static headers for HTTP and SSE servers, none for stdio (whose headers, if
// the chain sets any, travel as _meta.headers).
func (ep *endpoint) initialHeaders() map[string]string {
	if ep.server.IsStdio() {
		return map[string]string{}
	}
	return ep.server.Headers.Map()
}

// get returns the live connection, dialling a new one (bounded by
// session_init_timeout) when the last one died.
func (ep *endpoint) get(ctx context.Context) (*upstream.Conn, error) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.closed {
		return nil, upstream.ErrConnectionClosed
	}
	if ep.conn != nil {
		return ep.conn, nil
	}
	dctx, cancel := withTimeout(ctx, ep.server.SessionInitTimeout)
	defer cancel()
	conn, err := upstream.Dial(dctx, ep.server, ep.opts)
	if err != nil {
		return nil, err
	}
	ep.conn = conn
	return conn, nil
}

// drop forgets conn if it is still the current one, and closes it.
func (ep *endpoint) drop(conn *upstream.Conn) {
	ep.mu.Lock()
	if ep.conn == conn {
		ep.conn = nil
	}
	ep.mu.Unlock()
	go conn.Close()
}

func (ep *endpoint) close() {
	ep.mu.Lock()
	conn := ep.conn
	ep.conn, ep.closed = nil, true
	ep.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// session leases the stdio session for the call's user and thread,
// starting one in the thread's workspace if there is none. The caller must
// call release when the call is over: until then the session is in flight
// and the pool never closes it to make room.
func (ep *endpoint) session(ctx context.Context, req *interceptor.Request) (conn *upstream.Conn, key sessionpool.Key, pt *pinnedThread, release func(), err error) {
	user, thread := req.UserID, req.ThreadID
	if user == "" {
		user = "default"
	}
	if thread == "" {
		thread = workspace.DefaultThread
	}
	key = sessionpool.NewKey(ep.server.Name, user, thread, ep.version)
	srv := ep.server
	if ep.dataDir != "" {
		ws, err := workspace.Paths(ep.dataDir, user, thread)
		if err != nil {
			return nil, key, nil, nil, err
		}
		srv = pinned(ep.server, ws)
		pt = &pinnedThread{Thread: ws, cwd: srv.Cwd}
	}
	dctx, cancel := withTimeout(ctx, ep.server.SessionInitTimeout)
	defer cancel()
	conn, release, err = ep.pool.Get(dctx, key, func(dial context.Context, exited func()) (*upstream.Conn, error) {
		if pt != nil {
			// The folders are made when a session starts, not on every call.
			if err := pt.Create(); err != nil {
				return nil, err
			}
		}
		opts := ep.opts
		opts.OnExit = exited
		if pt != nil && ep.server.Cwd == "" {
			opts.Workspace = pt.Workspace
		}
		ictx, icancel := withTimeout(dial, ep.server.SessionInitTimeout)
		defer icancel()
		return upstream.Dial(ictx, srv, opts)
	})
	return conn, key, pt, release, err
}

// pinnedThread is the workspace a stdio call ran in.
type pinnedThread struct {
	workspace.Thread
	cwd string
}

// WorkspaceEnv names the variable that gives every pooled stdio child the
// absolute path of its thread's workspace, so a server can find it whatever
// its working directory is.
const WorkspaceEnv = "ANTLER_THREAD_WORKSPACE"

// pinned is srv for one thread: the child runs in the thread's workspace
// unless the operator set cwd, with TMPDIR, TMP and TEMP in its .mcp/tmp and
// ANTLER_THREAD_WORKSPACE naming the workspace, each unless the operator set
// it.
func pinned(srv *config.Server, ws workspace.Thread) *config.Server {
	c := *srv
	if c.Cwd == "" {
		c.Cwd = ws.Workspace
	}
	c.Env = append(config.Pairs(nil), srv.Env...)
	if _, set := c.Env.Get(WorkspaceEnv); !set {
		c.Env = append(c.Env, config.Pair{Key: WorkspaceEnv, Value: ws.Workspace})
	}
	for _, k := range []string{"TMPDIR", "TMP", "TEMP"} {
		if _, set := c.Env.Get(k); !set {
			c.Env = append(c.Env, config.Pair{Key: k, Value: ws.Tmp})
		}
	}
	return &c
}

// call is the end of the interceptor chain: it sends req on the wire.
func (ep *endpoint) call(ctx context.Context, req *interceptor.Request) (json.RawMessage, error) {
	name, tool, args := ep.server.Name, req.Tool, req.Arguments
	var conn *upstream.Conn
	var key sessionpool.Key
	var pt *pinnedThread
	var err error
	if ep.pool != nil {
		var release func()
		conn, key, pt, release, err = ep.session(ctx, req)
		if err == nil {
			defer release()
		}
	} else {
		conn, err = ep.get(ctx)
	}
	if errors.Is(err, sessionpool.ErrUserLimit) || errors.Is(err, sessionpool.ErrFull) {
		ep.log.Warn("no stdio session available", "server", name, "tool", tool, "user", req.UserID, "error", err.Error())
		return nil, &CallError{Server: name, Tool: tool, Err: err, Message: noSessionMessage(name, tool, err)}
	}
	if err != nil {
		ep.log.Warn("upstream unavailable", "server", name, "tool", tool, "error", Redact(err.Error()))
		return nil, &CallError{Server: name, Tool: tool, Err: err,
			Message: fmt.Sprintf("MCP server '%s' is unavailable", name)}
	}
	cctx, cancel := withTimeout(ctx, ep.server.ToolCallTimeout)
	defer cancel()
	var meta map[string]any
	if ep.server.IsStdio() {
		if len(req.Headers) > 0 {
			meta = map[string]any{"headers": req.Headers}
		}
	} else {
		cctx = upstream.WithCallHeaders(cctx, req.Headers)
	}
	var vc *virtualpath.Call // nil: no thread folders, nothing translated
	if pt != nil {
		vc = virtualpath.Begin(pt.Root, pt.Workspace, pt.cwd)
		defer vc.End()
	}
	raw, err := conn.CallTool(cctx, tool, args, meta)
	if err == nil {
		// Paths in the result that point into the thread's user data
		// become /mnt/user-data/...; files the call wrote are listed.
		return vc.Rewrite(raw), nil
	}
	var rpcErr *upstream.RPCError
	var tooLarge *upstream.ResultTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		if tooLarge.Ended && ep.pool == nil {
			ep.drop(conn) // cut to stop the message; a stdio session was evicted already
		}
		ep.log.Warn("upstream result above max_result_bytes", "server", name, "tool", tool, "max_result_bytes", tooLarge.Limit)
		return nil, &CallError{Server: name, Tool: tool, Err: err,
			Message: fmt.Sprintf("MCP tool '%s' on server '%s' returned a result larger than the %d-byte limit (max_result_bytes); it was discarded. Ask for less data at a time.", tool, name, tooLarge.Limit)}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		return nil, &CallError{Server: name, Tool: tool, Timeout: true, Err: err,
			Message: fmt.Sprintf("MCP tool '%s' on server '%s' timed out after %s", tool, name, ep.server.ToolCallTimeout)}
	case ctx.Err() != nil:
		return nil, &CallError{Server: name, Tool: tool, Err: ctx.Err(),
			Message: fmt.Sprintf("MCP tool '%s' on server '%s' was cancelled", tool, name)}
	case errors.As(err, &rpcErr):
		return nil, &CallError{Server: name, Tool: tool, Err: err,
			Message: fmt.Sprintf("MCP server '%s' returned an error for tool '%s': %s", name, tool, truncate(Redact(vc.Text(rpcErr.Message)), 1000))}
	case upstream.IsConnectionClosed(err):
		// The failed call is not replayed: it may have had effects. Only
		// this session is evicted, and only if the pool still holds it.
		if ep.pool != nil {
			ep.pool.Evict(key, conn)
		} else {
			ep.drop(conn)
		}
		ep.log.Warn("upstream connection lost", "server", name, "tool", tool, "error", Redact(err.Error()))
		return nil, &CallError{Server: name, Tool: tool, Err: err,
			Message: fmt.Sprintf("MCP server '%s' closed the connection during the call to '%s'", name, tool)}
	default:
		ep.log.Warn("upstream call failed", "server", name, "tool", tool, "error", Redact(err.Error()))
		return nil, &CallError{Server: name, Tool: tool, Err: err,
			Message: fmt.Sprintf("MCP tool '%s' on server '%s' failed", tool, name)}
	}
}

// noSessionMessage tells the model why a call found no session and what to
// do, without naming processes, limits or other users.
func noSessionMessage(server, tool string, err error) string {
	if errors.Is(err, sessionpool.ErrUserLimit) {
		return fmt.Sprintf("MCP tool '%s' on server '%s' could not start: this user already has the maximum number of open MCP sessions, all busy with calls or background tasks. Retry after one of them finishes, or continue in an existing thread.", tool, server)
	}
	return fmt.Sprintf("MCP tool '%s' on server '%s' could not start: the host has no free MCP session right now. Retry later.", tool, server)
}

// withTimeout bounds ctx by d; zero means no bound.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// urlPattern matches URLs so their query strings and user info can be cut
// from messages: a token in a query parameter must not reach a log or a model.
var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"'<>]+`)

// Redact removes user info, query strings and fragments from every URL in s.
func Redact(s string) string {
	return urlPattern.ReplaceAllStringFunc(s, func(u string) string {
		scheme, rest, _ := strings.Cut(u, "://")
		if at := strings.LastIndexByte(rest, '@'); at >= 0 {
			if slash := strings.IndexAny(rest, "/?#"); slash < 0 || at < slash {
				rest = rest[at+1:]
			}
		}
		if i := strings.IndexAny(rest, "?#"); i >= 0 {
			rest = rest[:i] + "?…"
		}
		return scheme + "://" + rest
	})
}
