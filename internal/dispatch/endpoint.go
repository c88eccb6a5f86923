package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/antler-mcp/antler/internal/audit"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/interceptor"
	"github.com/antler-mcp/antler/internal/jsonscan"
	"github.com/antler-mcp/antler/internal/metrics"
	"github.com/antler-mcp/antler/internal/sessionpool"
	"github.com/antler-mcp/antler/internal/tracing"
	"github.com/antler-mcp/antler/internal/upstream"
	"github.com/antler-mcp/antler/internal/virtualpath"
	"github.com/antler-mcp/antler/internal/workspace"
)

// WorkspaceEnv names the variable that gives every pooled stdio child the
// absolute path of its thread's workspace, so a server can find it whatever
// its working directory is.
const WorkspaceEnv = "ANTLER_THREAD_WORKSPACE"

// Options configure an Endpoint.
type Options struct {
	// Upstream are the options every connection to the server is dialled
	// with (logger, client version, base headers, result bound).
	Upstream upstream.Options
	Logger   *slog.Logger
	// Conn is the HTTP or SSE connection discovery opened, reused by every
	// caller until it dies (nil: dialled on first use).
	Conn *upstream.Conn
	// Pool, for a stdio server, holds its sessions per (user, thread);
	// nil means one shared connection. DataDir roots the sessions' thread
	// workspaces ("" leaves the child's working directory alone), and
	// Version (a digest of the server's settings) is part of their key.
	Pool    *sessionpool.Pool[*upstream.Conn]
	DataDir string
	Version string
	// Watcher finds the files a stdio call changes in its thread's
	// workspace; one should serve every endpoint of the pool, so calls of
	// two servers in one thread see each other (nil: the endpoint's own).
	Watcher *virtualpath.Watcher
	// OnNotification receives the server's unsolicited notifications
	// (upstream.Options.OnNotification) with the connection they came on:
	// a stdio session's user and thread, none for a shared connection. It
	// runs on the connection's reader and must not block.
	OnNotification func(Notification)
	// Audit, when set, records each stdio session's launch and each call
	// denied.
	Audit *audit.Logger
	// Metrics, when set, counts the tool calls by door and outcome.
	Metrics *metrics.Metrics
	// Tracer, when set, traces each request: a span for the chain, one
	// per interceptor and a client span for the upstream request, whose
	// trace context travels as _meta.traceparent (and, on HTTP and SSE,
	// the traceparent header). nil is tracing off.
	Tracer *tracing.Tracer
}

// Notification is an unsolicited notification from a server
// (notifications/resources/updated, .../list_changed).
type Notification struct {
	Server string
	// UserID and ThreadID name the stdio session it came on; both are ""
	// for an HTTP or SSE server's shared connection.
	UserID, ThreadID string
	Method           string
	Params           json.RawMessage
}

// ErrSessionGone is wrapped by the failure of a request sent on a durable
// task's streamable HTTP session (Request.Session) that the server no
// longer has: whatever the server kept in that session is lost.
var ErrSessionGone = errors.New("the server no longer has the task's protocol session")

// Endpoint is one server's way to the wire: its shared connection,
// re-dialled after it dies, or its pooled stdio sessions. It is safe for
// concurrent use.
type Endpoint struct {
	server  *config.Server
	opts    upstream.Options
	log     *slog.Logger
	pool    *sessionpool.Pool[*upstream.Conn]
	dataDir string
	version string
	watcher *virtualpath.Watcher
	onNote  func(Notification)
	audit   *audit.Logger
	metrics *metrics.Metrics
	tracer  *tracing.Tracer

	// lastThread is the workspace of the thread the last stdio call ran
	// in: calls in a row are mostly one thread's, whose paths need not be
	// built again.
	lastThread atomic.Pointer[pinnedThread]

	mu     sync.Mutex
	conn   *upstream.Conn // HTTP and SSE: one connection for every caller
	closed bool
}

// NewEndpoint returns the endpoint of srv.
func NewEndpoint(srv *config.Server, opts Options) *Endpoint {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ep := &Endpoint{server: srv, opts: opts.Upstream, log: log, conn: opts.Conn,
		pool: opts.Pool, dataDir: opts.DataDir, version: opts.Version, watcher: opts.Watcher, onNote: opts.OnNotification, audit: opts.Audit, metrics: opts.Metrics, tracer: opts.Tracer}
	if ep.watcher == nil {
		ep.watcher = virtualpath.NewWatcher()
	}
	ep.opts.OnNotification = ep.notifier("", "")
	return ep
}

// notifier is the OnNotification of a connection of user and thread (both
// "" for the shared one); nil without Options.OnNotification.
func (ep *Endpoint) notifier(user, thread string) func(string, json.RawMessage) {
	if ep.onNote == nil {
		return nil
	}
	return func(method string, params json.RawMessage) {
		ep.onNote(Notification{Server: ep.server.Name, UserID: user, ThreadID: thread, Method: method, Params: params})
	}
}

// Server is the server the endpoint reaches.
func (ep *Endpoint) Server() *config.Server { return ep.server }

// Call calls the server's tool (its upstream name; exposed is the agent's)
// through chain and returns the raw CallToolResult, host paths in it
// translated for the thread. Failures, denials included, are *CallError.
func (ep *Endpoint) Call(ctx context.Context, chain []interceptor.Interceptor, tool, exposed string, req Request) (json.RawMessage, error) {
	if ep.metrics == nil {
		return ep.call(ctx, chain, tool, exposed, req)
	}
	start := time.Now()
	raw, err := ep.call(ctx, chain, tool, exposed, req)
	door := req.Door
	if door == "" {
		door = "other"
	}
	ep.metrics.ToolCall(ep.server.Name, door, outcome(raw, err), time.Since(start))
	return raw, err
}

// outcome is a call's metrics outcome: denied before it reached the
// server, failed without a result, or the result's isError.
func outcome(raw json.RawMessage, err error) string {
	var ce *CallError
	switch {
	case errors.As(err, &ce) && ce.Denied:
		return metrics.OutcomeDenied
	case err != nil:
		return metrics.OutcomeFailed
	}
	isError := false
	jsonscan.Members(raw, func(key, value []byte) bool {
		if string(key) == "isError" {
			isError = string(value) == "true"
			return false
		}
		return true
	})
	if isError {
		return metrics.OutcomeToolError
	}
	return metrics.OutcomeOK
}

func (ep *Endpoint) call(ctx context.Context, chain []interceptor.Interceptor, tool, exposed string, req Request) (json.RawMessage, error) {
	t := target{server: ep.server.Name, tool: tool, method: MethodCallTool, session: req.Session, onSession: req.OnSession, liveOnly: req.LiveOnly}
	send := func(ctx context.Context, conn *upstream.Conn, ireq *interceptor.Request, meta map[string]any) (json.RawMessage, error) {
		if req.Task != nil {
			return conn.CallToolAsTask(ctx, ireq.Tool, ireq.Arguments, meta, req.Task)
		}
		return conn.CallTool(ctx, ireq.Tool, ireq.Arguments, meta)
	}
	ireq := ep.request(req)
	ireq.Tool, ireq.ExposedName, ireq.Arguments = tool, exposed, req.Arguments
	return ep.run(ctx, chain, t, ireq, req.Meta, send, true)
}

// Send runs a non-tool request on the server's connection through chain
// (the credential layers: see credential.Layers): for stdio the caller's
// pooled (user, thread) session, leased in its workspace like a call, for
// HTTP and SSE the shared connection, with the chain's headers on the wire.
// A nil op sends req.Method with req.Params, _meta merged in. Results are
// not path-translated: translation knows a CallToolResult's shape only.
// Failures are *CallError, as for Call.
func (ep *Endpoint) Send(ctx context.Context, chain []interceptor.Interceptor, req Request, op Op) (json.RawMessage, error) {
	t := target{server: ep.server.Name, method: req.method(), session: req.Session, onSession: req.OnSession, liveOnly: req.LiveOnly}
	send := func(ctx context.Context, conn *upstream.Conn, _ *interceptor.Request, meta map[string]any) (json.RawMessage, error) {
		if op != nil {
			return op(ctx, conn)
		}
		return conn.Request(ctx, t.method, withMeta(req.Params, meta))
	}
	return ep.run(ctx, chain, t, ep.request(req), req.Meta, send, false)
}

// request is the chain's view of req before the target fills it in.
func (ep *Endpoint) request(req Request) *interceptor.Request {
	return &interceptor.Request{
		Server:   ep.server,
		Headers:  ep.initialHeaders(),
		UserID:   req.UserID,
		ThreadID: req.ThreadID,
		Secrets:  req.Secrets,
	}
}

// wireFunc sends a request on conn once the chain is done; meta is the
// _meta it must carry.
type wireFunc func(ctx context.Context, conn *upstream.Conn, req *interceptor.Request, meta map[string]any) (json.RawMessage, error)

// run passes ireq through chain to the wire and maps what fails.
// downstream is the door's _meta, merged with the chain's stdio headers.
func (ep *Endpoint) run(ctx context.Context, chain []interceptor.Interceptor, t target, ireq *interceptor.Request, downstream map[string]any, send wireFunc, translate bool) (json.RawMessage, error) {
	var raw json.RawMessage
	var err error
	if ep.tracer != nil {
		raw, err = ep.traced(ctx, chain, t, ireq, downstream, send, translate)
	} else {
		base := func(ctx context.Context, r *interceptor.Request) (json.RawMessage, error) {
			return ep.wire(ctx, t, r, wireMeta(downstream, ep.server.IsStdio(), r.Headers), send, translate)
		}
		raw, err = interceptor.Chain(base, chain...)(ctx, ireq)
	}
	if err == nil {
		return raw, nil
	}
	if d, ok := interceptor.IsDenied(err); ok {
		ce := t.fail(err, d.Message)
		ce.Denied = true
		ep.audit.CallDenied(t.server, t.tool, ireq.UserID, ireq.ThreadID, d.By, d.Message)
		return nil, ce
	}
	var ce *CallError
	if errors.As(err, &ce) {
		return nil, ce
	}
	if ctx.Err() != nil {
		return nil, t.fail(ctx.Err(), t.cancelled())
	}
	ep.log.Warn("interceptor failed", "server", t.server, "tool", t.tool, "method", t.method, "error", Redact(err.Error()))
	return nil, t.fail(err, t.failed())
}

// initialHeaders are the headers a request starts from before the chain:
// the static headers for HTTP and SSE servers, none for stdio (whose
// headers, if the chain sets any, travel as _meta.headers).
func (ep *Endpoint) initialHeaders() map[string]string {
	if ep.server.IsStdio() {
		return map[string]string{}
	}
	return ep.server.Headers.Map()
}

// wire is the end of the chain: it takes the connection (a leased session
// for stdio), sends, and maps the transport's failures.
func (ep *Endpoint) wire(ctx context.Context, t target, req *interceptor.Request, meta map[string]any, send wireFunc, translate bool) (json.RawMessage, error) {
	// (Few returns, so that the defers are inlined: the failures are
	// mapped apart.)
	conn, key, pt, release, resumed, err := ep.connect(ctx, t, req)
	if err != nil {
		return nil, ep.connectFailed(t, req, err)
	}
	defer release()
	cctx, cancel := ctx, context.CancelFunc(nil)
	if ep.server.ToolCallTimeout > 0 || !ep.server.IsStdio() {
		// Unbounded, a stdio call needs no context of its own: nothing on
		// a stdio connection outlives a request on its context, so there
		// is nothing to cancel after it. mcp-go's HTTP transports start
		// work on it that the cancel ends.
		cctx, cancel = withTimeout(ctx, ep.server.ToolCallTimeout)
		defer cancel()
	}
	if !ep.server.IsStdio() {
		cctx = upstream.WithCallHeaders(cctx, req.Headers)
	}
	var vc *virtualpath.Call // nil: no thread folders, nothing translated
	if pt != nil && translate {
		vc = ep.watcher.Begin(pt.Root, pt.Workspace, pt.cwd)
		defer vc.End()
	}
	raw, err := send(cctx, conn, req, meta)
	if err != nil {
		return nil, ep.sendFailed(ctx, t, conn, key, vc, resumed, err)
	}
	if t.onSession != nil {
		t.onSession(conn.SessionID())
	}
	// Paths in the result that point into the thread's user data become
	// /mnt/user-data/...; files the call wrote are listed.
	return vc.Rewrite(raw), nil
}

// connect takes the connection a request goes on: its user's thread's
// leased stdio session (and the thread), the shared connection, or a
// durable task's resumed HTTP session. release gives it back.
func (ep *Endpoint) connect(ctx context.Context, t target, req *interceptor.Request) (conn *upstream.Conn, key sessionpool.Key, pt *pinnedThread, release func(), resumed bool, err error) {
	if ep.pool != nil {
		conn, key, pt, release, err = ep.session(ctx, req, t.liveOnly)
		return conn, key, pt, release, false, err
	}
	conn, err = ep.get(ctx, t.liveOnly)
	if err == nil && t.session != "" && ep.server.Type == config.TransportHTTP && conn.SessionID() != t.session {
		// A durable task's session that is not the shared one (the host
		// restarted, or the shared connection was re-dialled).
		if t.liveOnly {
			return nil, key, nil, nil, false, ErrNotLive // resuming would open one
		}
		if conn, err = ep.resume(ctx, t.session, conn.ProtocolVersion()); err == nil {
			resumedConn := conn
			return conn, key, nil, func() { _ = resumedConn.Close() }, true, nil
		}
	}
	return conn, key, nil, keep, false, err
}

// keep is the release of the shared connection: it stays open.
func keep() {}

// connectFailed maps the failure to take a connection.
func (ep *Endpoint) connectFailed(t target, req *interceptor.Request, err error) *CallError {
	switch {
	case errors.Is(err, ErrNotLive):
		return t.fail(err, t.unavailable())
	case errors.Is(err, sessionpool.ErrUserLimit) || errors.Is(err, sessionpool.ErrFull):
		ep.log.Warn("no stdio session available", "server", t.server, "tool", t.tool, "method", t.method, "user", req.UserID, "error", err.Error())
		return t.fail(err, t.noSession(err))
	default:
		ep.log.Warn("upstream unavailable", "server", t.server, "tool", t.tool, "method", t.method, "error", Redact(err.Error()))
		return t.fail(err, t.unavailable())
	}
}

// sendFailed maps the failure of a request sent on conn (ctx is the
// caller's, vc the call's workspace watch, resumed whether conn is a
// durable task's resumed session).
func (ep *Endpoint) sendFailed(ctx context.Context, t target, conn *upstream.Conn, key sessionpool.Key, vc *virtualpath.Call, resumed bool, err error) *CallError {
	var rpcErr *upstream.RPCError
	var tooLarge *upstream.ResultTooLargeError
	switch {
	case errors.As(err, &tooLarge):
		if tooLarge.Ended && ep.pool == nil {
			ep.drop(conn) // cut to stop the message; a stdio session was evicted already
		}
		ep.log.Warn("upstream result above max_result_bytes", "server", t.server, "tool", t.tool, "method", t.method, "max_result_bytes", tooLarge.Limit)
		return t.fail(err, t.tooLarge(tooLarge.Limit))
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		ce := t.fail(err, t.timedOut(ep.server.ToolCallTimeout))
		ce.Timeout = true
		return ce
	case ctx.Err() != nil:
		return t.fail(ctx.Err(), t.cancelled())
	case errors.As(err, &rpcErr):
		return t.fail(err, t.rpcError(truncate(Redact(vc.Text(rpcErr.Message)), 1000)))
	case upstream.IsConnectionClosed(err) && resumed:
		// A resumed task session the server no longer knows (404): only
		// that request fails; the shared connection is not touched.
		return t.fail(fmt.Errorf("%w: %w", ErrSessionGone, err), t.connectionLost())
	case upstream.IsConnectionClosed(err):
		// The failed request is not replayed: it may have had effects. Only
		// this session is evicted, and only if the pool still holds it.
		if ep.pool != nil {
			ep.pool.Evict(key, conn)
		} else {
			ep.drop(conn)
		}
		ep.log.Warn("upstream connection lost", "server", t.server, "tool", t.tool, "method", t.method, "error", Redact(err.Error()))
		return t.fail(err, t.connectionLost())
	default:
		ep.log.Warn("upstream call failed", "server", t.server, "tool", t.tool, "method", t.method, "error", Redact(err.Error()))
		return t.fail(err, t.failed())
	}
}

// get returns the live connection, dialling a new one (bounded by
// session_init_timeout) when the last one died, unless liveOnly.
func (ep *Endpoint) get(ctx context.Context, liveOnly bool) (*upstream.Conn, error) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.closed {
		return nil, upstream.ErrConnectionClosed
	}
	if ep.conn != nil {
		return ep.conn, nil
	}
	if liveOnly {
		return nil, ErrNotLive
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

// resume opens a connection on a durable task's streamable HTTP session
// (see upstream.Resume), bounded by session_init_timeout; protocol is the
// shared connection's revision, the one the session negotiated with the
// same server.
func (ep *Endpoint) resume(ctx context.Context, session, protocol string) (*upstream.Conn, error) {
	dctx, cancel := withTimeout(ctx, ep.server.SessionInitTimeout)
	defer cancel()
	return upstream.Resume(dctx, ep.server, ep.opts, session, protocol)
}

// drop forgets conn if it is still the current one, and closes it.
func (ep *Endpoint) drop(conn *upstream.Conn) {
	ep.mu.Lock()
	if ep.conn == conn {
		ep.conn = nil
	}
	ep.mu.Unlock()
	go conn.Close()
}

// Close closes the shared connection; later requests fail as unavailable.
// Pooled stdio sessions belong to the pool and are left alone.
func (ep *Endpoint) Close() {
	ep.mu.Lock()
	conn := ep.conn
	ep.conn, ep.closed = nil, true
	ep.mu.Unlock()
	if conn != nil {
		conn.Close()
	}
}

// session leases the stdio session for the request's user and thread,
// starting one in the thread's workspace if there is none (unless
// liveOnly: then the answer is ErrNotLive). The caller must
// call release when the request is over: until then the session is in
// flight and the pool never closes it to make room.
func (ep *Endpoint) session(ctx context.Context, req *interceptor.Request, liveOnly bool) (*upstream.Conn, sessionpool.Key, *pinnedThread, func(), error) {
	user, thread := req.UserID, req.ThreadID
	if user == "" {
		user = "default"
	}
	if thread == "" {
		thread = workspace.DefaultThread
	}
	key := sessionpool.NewKey(ep.server.Name, user, thread, ep.version)
	var pt *pinnedThread
	if last := ep.lastThread.Load(); ep.dataDir != "" && last != nil && last.user == user && last.thread == thread {
		pt = last
	} else if ep.dataDir != "" {
		ws, err := workspace.Paths(ep.dataDir, user, thread)
		if err != nil {
			return nil, key, nil, nil, err
		}
		cwd := ep.server.Cwd
		if cwd == "" {
			cwd = ws.Workspace
		}
		pt = &pinnedThread{Thread: ws, cwd: cwd, user: user, thread: thread}
		ep.lastThread.Store(pt)
	}
	if liveOnly {
		// Housekeeping, not a use: the process's idle clock stands.
		if conn, release, ok := ep.pool.TryBorrow(key); ok {
			return conn, key, pt, release, nil
		}
		return nil, key, nil, nil, ErrNotLive
	}
	if conn, release, ok := ep.pool.TryGet(key); ok { // the usual case: no deadline to set for the wait
		return conn, key, pt, release, nil
	}
	conn, release, err := ep.start(ctx, key, pt, user, thread)
	return conn, key, pt, release, err
}

// start is session's wait for a session the pool has no idle one of:
// another call's start, or its own (apart, so that the usual call's
// variables stay off the heap).
func (ep *Endpoint) start(ctx context.Context, key sessionpool.Key, pt *pinnedThread, user, thread string) (*upstream.Conn, func(), error) {
	dctx, cancel := withTimeout(ctx, ep.server.SessionInitTimeout)
	defer cancel()
	return ep.pool.Get(dctx, key, func(dial context.Context, exited func()) (*upstream.Conn, error) {
		if pt != nil {
			// The folders are made when a session starts, not on every call.
			if err := pt.Create(); err != nil {
				return nil, err
			}
		}
		// The server's settings for the thread are built only here: a
		// copy of them on every call would be garbage for all but the
		// first.
		srv := ep.server
		if pt != nil {
			srv = pinned(ep.server, pt.Thread)
		}
		opts := ep.opts
		opts.OnExit = exited
		opts.OnNotification = ep.notifier(user, thread)
		if pt != nil && ep.server.Cwd == "" {
			opts.Workspace = pt.Workspace
		}
		var unwatch func()
		if pt != nil {
			// The workspace is watched for the session's life: its calls
			// find the watches built.
			unwatch = ep.watcher.Acquire(pt.Workspace)
			opts.OnClose = unwatch
		}
		ictx, icancel := withTimeout(dial, ep.server.SessionInitTimeout)
		defer icancel()
		conn, err := upstream.Dial(ictx, srv, opts)
		if err != nil && unwatch != nil {
			unwatch() // not every failed dial closes its connection
		}
		if err == nil {
			ep.audit.StdioLaunch(srv.Name, srv.Command, len(srv.Args), user, thread, opts.Workspace)
		}
		return conn, err
	})
}

// pinnedThread is the workspace a stdio request ran in (read-only once
// made: calls share it).
type pinnedThread struct {
	workspace.Thread
	cwd          string
	user, thread string
}

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

// withTimeout bounds ctx by d; zero means no bound.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
