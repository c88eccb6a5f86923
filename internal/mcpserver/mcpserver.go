// Package mcpserver is Antler's MCP door: the aggregated tools of every
// upstream served as one MCP server over streamable HTTP (every revision
// 2024-11-05…2025-11-25 with sessions, and the stateless 2026-07-28
// protocol) and legacy HTTP+SSE. mcp-go's server carries the protocol; this
// package turns the tool cache into its tool set, routes each tools/call
// through the same call path as the REST door, and binds sessions and calls
// to the authenticated principal. The gateway mounts its handlers behind
// its own authentication and edge rules.
package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/spectask"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/tasktools"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/internal/tracing"
	"github.com/antler-mcp/antler/internal/workspace"
)

// The identity carrier of a tools/call: _meta keys of the call's params,
// or HTTP headers of the request that carries it. A _meta key wins over the
// header (it is per call; a header is per connection or per client).
const (
	// MetaThreadID names the call's thread (workspace.CheckID's rules).
	MetaThreadID = "antler/thread_id"
	// MetaSecrets holds per-request secrets: an object of strings.
	MetaSecrets = "antler/secrets"
	// MetaUserID names the user an internal principal acts for; ignored
	// (and logged) for any other principal.
	MetaUserID = "antler/user_id"

	// HeaderThreadID is the header form of MetaThreadID.
	HeaderThreadID = "X-Antler-Thread-Id"
	// HeaderSecretPrefix starts a header carrying one secret; the rest of
	// the header name, lower-cased (header names are case-insensitive), is
	// the secret's name.
	HeaderSecretPrefix = "X-Antler-Secret-"
)

// Keys of a listed tool's _meta: what the REST list carries beside the
// MCP fields.
const (
	MetaServer       = "antler/server"
	MetaOriginalName = "antler/original_name"
	MetaRouting      = "antler/routing"
	MetaTaskToolset  = "antler/task_toolset"
)

// ModernThread is the thread of a 2026-07-28 call that names none: that
// protocol has no session to derive one from.
const ModernThread = tasktools.DefaultThread

// SessionThread is the default thread of a call in the MCP session id: each
// session gets its own stdio sessions, as one agent conversation would.
func SessionThread(sessionID string) string { return "mcp-" + sessionID }

// DefaultThread says which thread a call that names none runs in.
type DefaultThread string

const (
	// ThreadPerSession runs it in its MCP session's own thread
	// (SessionThread), whose stdio processes end with the session.
	ThreadPerSession DefaultThread = "session"
	// ThreadPerUser runs it in its user's default thread, the one a REST
	// call without thread_id and a 2026-07-28 call without a thread use:
	// every session of a user shares one stdio process per server, and so
	// what such a process holds per connection: its workspace, its log
	// level, its resource subscriptions, and the server requests and log
	// messages that name no call (those reach the user's most recent call
	// on that process, whichever session made it). Users never share one.
	ThreadPerUser DefaultThread = "user"
)

// Defaults of Options.
const (
	DefaultSessionIdleTTL          = 30 * time.Minute
	DefaultWatchInterval           = 2 * time.Second
	DefaultMaxEventsPerSession     = 1024
	DefaultMaxSessionsPerPrincipal = 64
	DefaultMaxRoundsPerPrincipal   = 16
	DefaultTaskInputTimeout        = 5 * time.Minute
)

// Options configure a Server.
type Options struct {
	Cache *toolcache.Cache
	// Tasks is the durable task runtime (nil: none). With it the door
	// serves task_toolsets submit tools, the two host tools, and the same
	// durable tasks as spec Tasks (2025-11-25 tasks/* and the 2026-07-28
	// tasks extension).
	Tasks  *taskservice.Service
	Logger *slog.Logger
	// Version is the serverInfo version.
	Version string
	// CallSlots caps the tool calls each caller has in flight (nil: no
	// cap); the gateway passes the slots its REST door takes from. A slot
	// is held until the upstream call ends: a 2026-07-28 call holds it
	// across its rounds, its retries take none.
	CallSlots *principal.Slots
	// StreamSlots caps the streams each caller holds open (nil: no cap);
	// the gateway passes the slots its GET streams take from. A POST the
	// door holds open until an event (subscriptions/listen, a 2025-11-25
	// tasks/result) takes one for as long as it is open.
	StreamSlots *principal.Slots
	// MaxRoundsPerPrincipal caps the 2026-07-28 calls one caller holds
	// suspended, waiting for its answer to an input request; the call that
	// would pass it is ended with an error result (0: the CallSlots cap,
	// or DefaultMaxRoundsPerPrincipal without one).
	MaxRoundsPerPrincipal int
	// SessionIdleTTL ends a session idle this long (0: DefaultSessionIdleTTL).
	SessionIdleTTL time.Duration
	// WatchInterval is how often the tool set is checked for a rebuild, so
	// notifications/tools/list_changed reaches clients that are only
	// listening (0: DefaultWatchInterval; negative: only on list and call).
	WatchInterval time.Duration
	// MaxEventsPerSession bounds a session's resumable events
	// (0: DefaultMaxEventsPerSession); their bytes are bounded too, per
	// session and in all (see eventStore).
	MaxEventsPerSession int
	// MaxSessionsPerPrincipal caps the streamable-HTTP sessions one caller
	// holds at once; one more initialize is 429 (0:
	// DefaultMaxSessionsPerPrincipal). Legacy SSE sessions live as long as
	// their stream, which the gateway caps per caller.
	MaxSessionsPerPrincipal int
	// ListPageSize is the page size of the aggregated resource, template
	// and prompt lists (0: DefaultListPageSize).
	ListPageSize int
	// ToolPageSize is the page size of tools/list (0:
	// DefaultToolPageSize).
	ToolPageSize int
	// TaskInputTimeout bounds how long a 2025-11-25 tasks/result waits
	// for its client's answer to the elicitation/create that asks a
	// durable task's question (0: DefaultTaskInputTimeout).
	TaskInputTimeout time.Duration
	// DefaultThread is the thread of a session's call that names none
	// ("": ThreadPerSession). ThreadPerUser trades the isolation of each
	// session's stdio processes for fewer processes: many sessions of one
	// user then cost what one does.
	DefaultThread DefaultThread
}

// Server is the MCP door.
type Server struct {
	cache   *toolcache.Cache
	tasks   *tasktools.Tools
	spec    *specTasks
	log     *slog.Logger
	calls   *principal.Slots
	streams *principal.Slots
	// requests bounds each user's requests to upstreams besides tool calls.
	requests inflight
	// threadPerUser is Options.DefaultThread == ThreadPerUser.
	threadPerUser bool

	mcp        *server.MCPServer
	streamable *server.StreamableHTTPServer
	sse        *server.SSEServer
	sessions   *sessionTable
	agg        *aggregate
	// maxSessions caps one principal's streamable sessions.
	maxSessions int
	// listeners are the open GET streams, rounds the 2026-07-28 calls
	// waiting for their client's input (see relay.go).
	listeners listeners
	rounds    rounds
	// events are the streamable-HTTP streams' events, kept for resumption.
	events *eventStore
	// ttl is the session idle TTL mcp-go applies.
	ttl time.Duration
	// implementation is the serverInfo of a 2026-07-28 result, and
	// modernPrefix the members mcp-go adds to one, ready to splice.
	implementation     mcp.Implementation
	implementationJSON json.RawMessage
	modernPrefix       []byte

	// syncMu serializes syncs; synced is the last one's outcome, read
	// without the lock by every call whose tool set has not changed.
	syncMu sync.Mutex
	synced atomic.Pointer[syncedSet]

	interval   time.Duration
	startWatch sync.Once
	watchCtx   context.Context
	stop       context.CancelFunc
	watching   sync.WaitGroup
}

// New builds the door; nothing is served until its handlers are mounted.
func New(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	ttl := opts.SessionIdleTTL
	if ttl <= 0 {
		ttl = DefaultSessionIdleTTL
	}
	maxEvents := opts.MaxEventsPerSession
	if maxEvents <= 0 {
		maxEvents = DefaultMaxEventsPerSession
	}
	s := &Server{cache: opts.Cache, tasks: tasktools.New(opts.Tasks, log), log: log, calls: opts.CallSlots, streams: opts.StreamSlots, agg: newAggregate(opts.ListPageSize), maxSessions: opts.MaxSessionsPerPrincipal}
	if s.maxSessions <= 0 {
		s.maxSessions = DefaultMaxSessionsPerPrincipal
	}
	s.ttl = ttl
	s.threadPerUser = opts.DefaultThread == ThreadPerUser
	s.implementation = mcp.Implementation{Name: "antler", Version: version}
	s.implementationJSON, _ = json.Marshal(s.implementation)
	s.modernPrefix = fmt.Appendf(nil, `{"resultType":%q,"_meta":{%q:%s},`, mcp.ResultTypeComplete, mcp.MetaKeyServerInfo, s.implementationJSON)
	s.events = newEventStore(storeLimits{events: maxEvents, sessionBytes: maxSessionEventBytes, totalBytes: maxEventStoreBytes, eventBytes: maxStoredEventBytes},
		func(id string) string {
			if e := s.sessions.get(id); e != nil {
				return e.owner.User
			}
			return ""
		})
	s.rounds.max = opts.MaxRoundsPerPrincipal
	if s.rounds.max <= 0 && opts.CallSlots != nil {
		s.rounds.max = opts.CallSlots.Max()
	}
	if s.rounds.max <= 0 {
		s.rounds.max = DefaultMaxRoundsPerPrincipal
	}
	s.requests.max = DefaultMaxRoundsPerPrincipal
	if opts.CallSlots != nil {
		s.requests.max = opts.CallSlots.Max()
	}
	s.watchCtx, s.stop = context.WithCancel(context.Background())
	s.sessions = newSessionTable(s.watchCtx)
	if opts.Tasks != nil {
		s.spec = newSpecTasks(s.watchCtx, spectask.New(opts.Tasks, log), s.notify, s.maxSessions)
		s.spec.inputTimeout = opts.TaskInputTimeout
		if s.spec.inputTimeout <= 0 {
			s.spec.inputTimeout = DefaultTaskInputTimeout
		}
	}
	hooks := &server.Hooks{}
	// The tool set is synced before a session is initialized, so the
	// notifications/tools/list_changed mcp-go sends for the first set reaches
	// no session: a client would hear a spurious change, and a session that
	// got a notification has every later answer upgraded to a resumable SSE
	// stream (mcp-go keeps the upgrade for the session's life), where a plain
	// call is cheaper as one JSON body.
	hooks.AddBeforeInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest) { s.sync(ctx) })
	hooks.AddBeforeListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest) { s.sync(ctx) })
	hooks.AddBeforeCallTool(func(ctx context.Context, _ any, _ *mcp.CallToolRequest) { s.sync(ctx) })
	hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) { s.sessions.registered(cs) })
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { s.sessionEnded(cs.SessionID()) })
	// The only request initialization hook: a request it admits is ended
	// by mcp-go's success or error hook, which a later hook's refusal would
	// skip.
	hooks.AddOnRequestInitialization(s.initRequest)
	s.taskHooks(hooks)
	s.aggregateHooks(hooks)
	s.mcp = server.NewMCPServer("antler", version,
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(completions{s}),
		server.WithResourceCompletionProvider(completions{s}),
		server.WithLogging(), // upstream log messages are relayed (relay.go)
		server.WithRecovery(),
		toolPaging(opts.ToolPageSize),
		server.WithHooks(hooks),
		server.WithExtensions(s.extensions()),
		server.WithInstructions("Antler fronts several MCP servers: tool names are prefixed with their server's name unless the operator turned prefixes off."),
	)
	s.mountAggregate()
	// The gateway's edge rules (Host, Origin, Sec-Fetch-Site) already ran
	// and are the one rule for both doors: mcp-go's own loopback check
	// would refuse the allowed_hosts a reverse proxy forwards.
	s.streamable = server.NewStreamableHTTPServer(s.mcp,
		server.WithDisableLocalhostProtection(true),
		server.WithSessionIdManagerResolver(resolver{s.sessions}),
		server.WithHTTPContextFunc(s.streamableContext),
		server.WithEventStore(s.events),
		server.WithSessionIdleTTL(ttl),
		server.WithStreamableHTTPLogger(log),
	)
	s.sse = server.NewSSEServer(s.mcp,
		server.WithSSEDisableLocalhostProtection(true),
		server.WithSSEEndpoint("/sse"),
		server.WithMessageEndpoint("/messages"),
		server.WithSSEContextFunc(withCaller),
		server.WithSessionIDGenerator(func(ctx context.Context, _ *http.Request) (string, error) {
			p, ok := principal.FromContext(ctx)
			if !ok {
				return "", errUnauthenticated
			}
			id := s.sessions.mint(p)
			if minted, ok := ctx.Value(mintedKey{}).(*string); ok {
				*minted = id // (SSE forgets it if mcp-go does not register it)
			}
			return id, nil
		}),
	)
	s.interval = opts.WatchInterval
	if s.interval == 0 {
		s.interval = DefaultWatchInterval
	}
	return s
}

// used starts watching the cache on the door's first request: a host
// nobody reaches over MCP never discovers on its behalf.
func (s *Server) used() {
	s.startWatch.Do(func() {
		if s.interval > 0 && s.cache != nil && s.watchCtx.Err() == nil {
			s.watching.Add(1)
			go s.watch(s.watchCtx, s.interval)
		}
	})
}

// Close ends every session and open stream and stops watching the cache.
func (s *Server) Close() {
	s.startWatch.Do(func() {}) // a request racing Close starts no watcher
	s.stop()
	s.watching.Wait()
	s.spec.close()
	// Shutdown also stops the idle-session sweeper; mcp-go owns no HTTP
	// server here, so it only ends sessions.
	_ = s.streamable.Shutdown(context.Background())
	s.sse.CloseSessions()
}

// watch re-syncs the tool set every interval.
func (s *Server) watch(ctx context.Context, interval time.Duration) {
	defer s.watching.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sync(ctx)
		}
	}
}

var errUnauthenticated = errors.New("the MCP endpoint is mounted without authentication")

// sync makes mcp-go's tool set the cache's current one (plus the host task
// tools while the task runtime runs). A change replaces the set, which
// sends notifications/tools/list_changed to every session; an unchanged
// cache costs one signature check.
func (s *Server) sync(ctx context.Context) { s.syncToolSet(ctx) }

// syncToolSet is sync returning the synced snapshot and the names of its
// plain tools (nil, nil when the cache has none to give): a tool mcp-go
// serves whose call is an upstream call, not a task submit, a host tool or
// one with x-mcp-header parameters (mcp-go checks their headers).
func (s *Server) syncToolSet(ctx context.Context) (*toolcache.ToolSet, map[string]bool) {
	if s.cache == nil {
		return nil, nil
	}
	snap, err := s.cache.ToolSet(ctx)
	if err != nil {
		s.log.Warn("MCP tools unavailable", "error", dispatch.Redact(err.Error()))
		return nil, nil
	}
	running := s.tasks.Running()
	if cur := s.synced.Load(); cur.is(snap, running) {
		return snap, cur.plain
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	last := s.synced.Load()
	if last.is(snap, running) {
		return snap, last.plain
	}
	tools := append(append([]toolcache.Tool{}, snap.Tools...), s.tasks.Listed()...)
	served := make([]server.ServerTool, 0, len(tools))
	plain := make(map[string]bool, len(snap.Tools))
	for i, t := range tools {
		mt := Tool(t)
		if err := mcp.ValidateParamHeaderAnnotations(&mt); err != nil {
			// mcp-go refuses such a definition (it would panic); the
			// tool stays callable through REST.
			s.log.Warn("MCP tool not served on /mcp: invalid x-mcp-header annotations", "tool", t.Name, "error", err.Error())
			continue
		}
		served = append(served, server.ServerTool{Tool: mt, Handler: s.callTool})
		// A durable tool (a task toolset's, or one its server runs as a
		// 2025-11-25 task) is submitted by callTool, never the door's call.
		if i < len(snap.Tools) && !t.IsDurable() && !tasktools.IsHostTool(t.Name) && !bytes.Contains(t.InputSchema, []byte("x-mcp-header")) {
			plain[t.Name] = true
		}
	}
	// A name listed twice is mcp-go's last definition: leave it to mcp-go.
	seen := make(map[string]int, len(served))
	for _, st := range served {
		seen[st.Tool.Name]++
	}
	for name, n := range seen {
		if n > 1 {
			delete(plain, name)
		}
	}
	s.mcp.SetTools(served...)
	if last != nil && snap != last.snap {
		s.listsChanged()
	}
	// Published once mcp-go serves the tools: a call that finds it synced
	// finds them.
	s.synced.Store(&syncedSet{snap: snap, tasks: running, plain: plain})
	return snap, plain
}

// syncedSet is what a sync gave mcp-go: the tool set, whether the host
// tools were listed, and the names of the set's tools a plain call of which
// the door answers itself (fastcall.go). It is never changed once
// published.
type syncedSet struct {
	snap  *toolcache.ToolSet
	tasks bool
	plain map[string]bool
}

// is reports whether s is the sync of snap with the host tools listed or
// not (running); false for nil.
func (s *syncedSet) is(snap *toolcache.ToolSet, running bool) bool {
	return s != nil && s.snap == snap && s.tasks == running
}

// Tool is a REST-listed tool as MCP lists it: the same name and
// description, the schemas byte for byte, and the REST fields MCP has no
// place for under _meta (MetaServer, MetaOriginalName, MetaRouting,
// MetaTaskToolset).
func Tool(t toolcache.Tool) mcp.Tool {
	meta := map[string]any{MetaServer: t.Server, MetaOriginalName: t.OriginalName}
	if t.Routing != nil {
		meta[MetaRouting] = t.Routing
	}
	if t.TaskToolset != nil {
		meta[MetaTaskToolset] = t.TaskToolset
	}
	in := t.InputSchema
	if len(in) == 0 {
		in = json.RawMessage(`{"type":"object"}`)
	}
	mt := mcp.Tool{Name: t.Name, Description: t.Description, RawInputSchema: in, Meta: &mcp.Meta{AdditionalFields: meta}}
	if len(t.OutputSchema) > 0 {
		mt.RawOutputSchema = t.OutputSchema
	}
	return mt
}

// callTool is every tool's handler: the same path as the REST door.
func (s *Server) callTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	defer drainNotifications(ctx) // progress before the result (flush.go)
	call, err := s.identify(ctx, req)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	name := req.Params.Name
	if tasktools.IsHostTool(name) && s.tasks.Configured() {
		return fromResult(s.tasks.CallHostTool(ctx, name, call))
	}
	snap, err := s.cache.ToolSet(ctx)
	if err != nil {
		return mcp.NewToolResultError("MCP tools are unavailable: " + dispatch.Redact(err.Error())), nil
	}
	tool, ok := snap.Tool(name)
	if !ok {
		return mcp.NewToolResultError(fmt.Sprintf("unknown tool %q", truncate(name))), nil
	}
	if tool.IsDurable() {
		ctx, end := doorSpan(ctx, snap.Tracer(), call, tool)
		res, err := s.tasks.Submit(ctx, tool, call)
		end(tasktools.SpanError(res, err))
		return fromResult(res, err)
	}
	// The slot is released when the upstream call ends (see relayed); a
	// retry of a suspended call runs none of its own.
	release := func() {}
	if s.calls != nil && !isRetry(ctx, req) {
		var ok bool
		if release, ok = s.calls.Acquire(call.UserID); !ok {
			return mcp.NewToolResultError("too many concurrent tool calls: this caller is at http.per_principal.max_concurrent_calls"), nil
		}
	}
	meta := upstreamMeta(ctx, req.Params.Meta)
	raw, asked, err := s.relayed(ctx, req, release, func(ctx context.Context) (json.RawMessage, error) {
		return invoke(ctx, snap, name, call, meta)
	})
	if asked != nil {
		return asked, nil
	}
	if err != nil {
		var ce *dispatch.CallError
		switch {
		case errors.As(err, &ce):
			return mcp.NewToolResultError(ce.Message), nil
		case errors.Is(err, toolcache.ErrUnknownTool):
			return mcp.NewToolResultError(fmt.Sprintf("unknown tool %q", truncate(name))), nil
		}
		s.log.Error("MCP tool call failed", "tool", name, "error", dispatch.Redact(err.Error()))
		return nil, fmt.Errorf("MCP tool '%s' failed", truncate(name))
	}
	res, err := mcp.ParseCallToolResult((*json.RawMessage)(&raw))
	if err != nil {
		s.log.Warn("MCP tool result not relayable", "tool", name, "error", err.Error())
		return mcp.NewToolResultError(fmt.Sprintf("MCP tool '%s' returned a result this endpoint cannot relay", truncate(name))), nil
	}
	// The upstream's protocol fields are its own: mcp-go sets resultType
	// and the serverInfo _meta (Antler's) for this client's revision.
	res.ResultType, res.InputRequests, res.RequestState = "", nil, ""
	dropServerInfo(res)
	return res, nil
}

// invoke is the one call into the shared call path (the REST door makes the
// same one); meta is the _meta forwarded upstream.
func invoke(ctx context.Context, snap *toolcache.ToolSet, name string, call dispatch.Request, meta map[string]any) (json.RawMessage, error) {
	call.Name, call.Meta = name, meta
	if tr := snap.Tracer(); tr != nil {
		return invokeTraced(ctx, tr, snap, call)
	}
	return snap.Invoke(ctx, call)
}

// SpanMCPCall is the server span of a tools/call on the MCP endpoint, the
// parent of the call path's spans.
const SpanMCPCall = "antler.mcp tools/call"

// invokeTraced is invoke in a server span whose parent is the caller's
// trace context: the request's _meta.traceparent, else the HTTP request's
// traceparent header.
func invokeTraced(ctx context.Context, tr *tracing.Tracer, snap *toolcache.ToolSet, call dispatch.Request) (json.RawMessage, error) {
	var server string
	if t, ok := snap.Tool(call.Name); ok {
		server = t.Server
	}
	ctx, end := startDoorSpan(ctx, tr, call, server)
	raw, err := snap.Invoke(ctx, call)
	end(raw, err)
	return raw, err
}

// doorSpan starts the endpoint's server span for a call that does not go
// through invoke (a durable task's submit); end records the outcome as
// invokeTraced does (a failed or denied submit marks the span failed) and
// is a no-op when tracing is off.
func doorSpan(ctx context.Context, tr *tracing.Tracer, call dispatch.Request, tool toolcache.Tool) (context.Context, func(error)) {
	call.Name = tool.Name // the exposed name, as invoke sets it
	ctx, end := startDoorSpan(ctx, tr, call, tool.Server)
	return ctx, func(err error) { end(nil, err) }
}

// startDoorSpan starts the server span of a tools/call under the caller's
// trace context: the request's _meta.traceparent, else the HTTP request's
// traceparent header.
func startDoorSpan(ctx context.Context, tr *tracing.Tracer, call dispatch.Request, server string) (context.Context, func(json.RawMessage, error)) {
	parent, state := metaString(call.Meta, tracing.KeyTraceparent), metaString(call.Meta, tracing.KeyTracestate)
	if c, ok := ctx.Value(callerKey{}).(caller); ok && parent == "" {
		parent, state = c.traceparent, c.tracestate
	}
	return dispatch.StartDoorSpan(ctx, tr, dispatch.DoorSpan{Name: SpanMCPCall, Door: dispatch.DoorMCP, Method: dispatch.MethodCallTool,
		Tool: call.Name, Server: server, TraceParent: parent, TraceState: state})
}

// metaString is meta[key] when it is a string, else "".
func metaString(meta map[string]any, key string) string {
	s, _ := meta[key].(string)
	return s
}

// dropServerInfo removes the upstream's io.modelcontextprotocol/serverInfo
// from a relayed result's _meta: the server a client talks to is Antler,
// which mcp-go names on a 2026-07-28 result and an older revision has no
// place for. The result's own _meta keys stay.
func dropServerInfo(res *mcp.CallToolResult) {
	if res.Meta == nil {
		return
	}
	delete(res.Meta.AdditionalFields, mcp.MetaKeyServerInfo)
	if len(res.Meta.AdditionalFields) == 0 && res.Meta.ProgressToken == nil {
		res.Meta = nil
	}
}

// fromResult converts a task tool's answer.
func fromResult(res tasktools.Result, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	return mcp.ParseCallToolResult((*json.RawMessage)(&b))
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// caller is what the HTTP request says about a call: who sent it (the
// gateway authenticated it) and the header carriers.
type caller struct {
	p       principal.Principal
	thread  string
	secrets map[string]string
	err     error
	// traceparent and tracestate are the request's W3C trace context
	// headers, the parent of a traced call without one in its _meta.
	traceparent, tracestate string
}

type callerKey struct{}

// withCaller is mcp-go's HTTP context function for both transports: the
// principal the gateway authenticated and the X-Antler-* headers, parsed
// once per request, in one pass over the headers (the secret headers have
// no fixed names, so every header is looked at anyway).
func withCaller(ctx context.Context, r *http.Request) context.Context {
	p, ok := principal.FromContext(r.Context())
	if !ok {
		return ctx
	}
	c := caller{p: p}
	for k, vs := range r.Header {
		if len(vs) == 0 {
			continue
		}
		switch k {
		case traceparentHeader:
			c.traceparent = vs[0]
		case tracestateHeader:
			c.tracestate = vs[0]
		case HeaderThreadID:
			c.thread = vs[0]
		default:
			if name, ok := secretHeader(k); ok {
				if c.secrets == nil {
					c.secrets = map[string]string{}
				}
				c.secrets[name] = vs[0]
			}
		}
	}
	if c.thread != "" {
		if err := workspace.CheckID(c.thread); err != nil {
			c.err = fmt.Errorf("%s header: %w", HeaderThreadID, err)
		}
	}
	return context.WithValue(ctx, callerKey{}, c)
}

// The trace context headers as a request's header map spells them.
var (
	traceparentHeader = http.CanonicalHeaderKey(tracing.KeyTraceparent)
	tracestateHeader  = http.CanonicalHeaderKey(tracing.KeyTracestate)
)

// secretHeader is the secret a request header of key k carries, by its
// lower-case name: k is HeaderSecretPrefix and a name, in any case. Only a
// key that may have the prefix is canonicalized (every request's headers
// are scanned).
func secretHeader(k string) (string, bool) {
	if len(k) <= len(HeaderSecretPrefix) || !strings.EqualFold(k[:len(HeaderSecretPrefix)], HeaderSecretPrefix) {
		return "", false // (the canonical spelling of k would not have the prefix either)
	}
	name, ok := strings.CutPrefix(http.CanonicalHeaderKey(k), HeaderSecretPrefix)
	if !ok || name == "" {
		return "", false
	}
	return strings.ToLower(name), true
}

// identify resolves a call into the one request type of the call path:
// its name, user, thread, secrets and arguments (_meta over headers,
// the session's thread by default).
func (s *Server) identify(ctx context.Context, req mcp.CallToolRequest) (dispatch.Request, error) {
	c, ok := ctx.Value(callerKey{}).(caller)
	if !ok {
		return dispatch.Request{}, errUnauthenticated
	}
	if c.err != nil {
		return dispatch.Request{}, c.err
	}
	call := dispatch.Request{Name: req.Params.Name, UserID: c.p.User, ThreadID: c.thread, Secrets: c.secrets, Door: dispatch.DoorMCP}
	var meta map[string]any
	if req.Params.Meta != nil {
		meta = req.Params.Meta.AdditionalFields
	}
	if v, ok := meta[MetaThreadID]; ok && v != nil && v != "" { // "" is no thread, as on REST
		t, isString := v.(string)
		if !isString {
			return call, fmt.Errorf("_meta %s: must be a string", MetaThreadID)
		}
		if err := workspace.CheckID(t); err != nil {
			return call, fmt.Errorf("_meta %s: %w", MetaThreadID, err)
		}
		call.ThreadID = t
	}
	if v, ok := meta[MetaSecrets]; ok && v != nil {
		obj, isObject := v.(map[string]any)
		if !isObject {
			return call, fmt.Errorf("_meta %s: must be an object of strings", MetaSecrets)
		}
		secrets := make(map[string]string, len(c.secrets)+len(obj))
		for k, v := range c.secrets {
			secrets[k] = v
		}
		for k, v := range obj {
			str, isString := v.(string)
			if !isString {
				return call, fmt.Errorf("_meta %s.%s: must be a string", MetaSecrets, truncate(k))
			}
			secrets[k] = str
		}
		call.Secrets = secrets
	}
	if v, ok := meta[MetaUserID]; ok && v != nil && v != "" {
		u, isString := v.(string)
		if !isString {
			return call, fmt.Errorf("_meta %s: must be a string", MetaUserID)
		}
		if err := workspace.CheckID(u); err != nil {
			return call, fmt.Errorf("_meta %s: %w", MetaUserID, err)
		}
		user, ignored := c.p.ActingUser(u)
		if ignored {
			s.log.Warn("ignoring _meta antler/user_id from a principal that is not internal", "principal", c.p.User, "role", c.p.Role, "user_id", u)
		}
		call.UserID = user
	}
	if call.ThreadID == "" {
		call.ThreadID = ModernThread
		if id := sessionIDFrom(ctx); id != "" && !s.threadPerUser {
			call.ThreadID = SessionThread(id)
		}
	}
	args, err := arguments(req)
	if err != nil {
		return call, err
	}
	call.Arguments = args
	return call, nil
}

// arguments are the call's arguments as raw JSON ({} when absent); like
// the REST door, anything but an object is refused.
func arguments(req mcp.CallToolRequest) (json.RawMessage, error) {
	raw := bytes.TrimSpace(req.Params.RawArguments)
	if len(raw) == 0 && req.Params.Arguments != nil {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		raw = b
	}
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '{' {
		return nil, errors.New("arguments: must be a JSON object")
	}
	return raw, nil
}

// newSessionID is 128 random bits in hex: a session id is a handle, never
// a credential, but it must not be guessable.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
