// Package upstream connects to one MCP server over stdio, legacy HTTP+SSE or
// streamable HTTP with mcp-go, and exchanges tool lists, tool calls and any
// other request with it as raw JSON, so schemas and results reach agents
// exactly as the server wrote them. What the server sends back about a call
// (progress, log messages, its own sampling, elicitation and roots requests)
// is relayed to the downstream client that made the call (relay.go).
package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/egress"
)

// ClientName is the implementation name sent to upstream servers.
const ClientName = "antler"

// ErrConnectionClosed is wrapped by errors that mean the connection is gone
// (the process exited, the stream broke): the next call needs a new one.
var ErrConnectionClosed = errors.New("upstream connection closed")

// ErrUnsupportedVersion is wrapped when a pinned protocol_version is not an
// MCP revision this client speaks.
var ErrUnsupportedVersion = errors.New("unsupported MCP protocol version")

// RPCError is a JSON-RPC error answered by the upstream server.
type RPCError struct {
	Code    int
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("upstream error %d: %s", e.Code, e.Message)
}

// inheritedEnv are the only host variables a stdio child inherits, as in the
// MCP Python SDK's default environment: the host's own secrets (API keys,
// database URLs) never reach a child unless the operator passes them in env.
var inheritedEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}

// sseResponseCap replaces mcp-go's 60 s SSE response cap: calls are bounded
// by tool_call_timeout, and a call with none may run this long.
const sseResponseCap = 7 * 24 * time.Hour

// stdioExitGrace is how long Close waits for a child to exit on its own
// once its stdin is closed, before killing its process group.
const stdioExitGrace = 2 * time.Second

// Options tune a connection.
type Options struct {
	Logger  *slog.Logger
	Version string // client version sent in clientInfo
	// OnExit is called once when a stdio child has exited on its own (its
	// stderr closed), so a pool can evict the session before the next call
	// fails. Not called for a Close.
	OnExit func()
	// OnClose is called once when Close has ended the connection (for
	// stdio, once the child is reaped), whatever ended it: a pool's owner
	// closes every session, so it marks the session's end for state kept
	// beside it (a workspace's watches).
	OnClose func()
	// Workspace is set when the host chose the stdio child's working
	// directory, a thread workspace agents can write: the launcher is then
	// kept from reading configuration there (see confine.go).
	Workspace string
	// BaseHeaders returns the headers of HTTP requests that are not tool
	// calls (discovery, the SSE stream, session teardown). nil means the
	// server's static headers.
	BaseHeaders func() map[string]string
	// MaxResultBytes bounds one message from the server when the server's
	// own max_result_bytes is not set (zero: DefaultMaxResultBytes).
	MaxResultBytes int64
	// RelayTimeout bounds how long a server request relayed to a downstream
	// client waits for its answer (zero: DefaultRelayTimeout).
	RelayTimeout time.Duration
	// OnNotification receives the upstream's unsolicited notifications
	// (notifications/tools/list_changed, .../resources/list_changed,
	// .../prompts/list_changed, notifications/resources/updated). It runs
	// on the connection's reader and must not block.
	OnNotification func(method string, params json.RawMessage)
	// KeepSession keeps a streamable HTTP session alive past Close (no
	// DELETE), for servers that keep durable tasks in it: a host restart
	// must not end the tasks with the session (see Conn.KeepSession).
	KeepSession bool
}

type callHeadersKey struct{}

// WithCallHeaders returns ctx carrying the exact headers one tool call must
// send. They replace the base headers on that request: the interceptor chain
// already started from the static headers, and mcp-go would otherwise let a
// static header overwrite a per-call one.
func WithCallHeaders(ctx context.Context, h map[string]string) context.Context {
	return context.WithValue(ctx, callHeadersKey{}, h)
}

// headerFunc picks a request's headers: the call's own, or the base ones.
func (c *Conn) headerFunc(ctx context.Context) map[string]string {
	if h, ok := ctx.Value(callHeadersKey{}).(map[string]string); ok {
		return h
	}
	if c.baseHeaders != nil {
		return c.baseHeaders()
	}
	return c.server.Headers.Map()
}

// Tool is one upstream tool as the server described it.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Execution is the tool's execution object as the server wrote it
	// (2025-11-25: {"taskSupport": "forbidden"|"optional"|"required"}).
	Execution json.RawMessage `json:"execution,omitempty"`
}

// TaskSupport is the tool's execution.taskSupport: "optional" or
// "required" when the server can run a call of it as a 2025-11-25 task,
// "forbidden" (the default, also for an absent or unreadable field)
// otherwise.
func (t Tool) TaskSupport() string {
	var e struct {
		TaskSupport string `json:"taskSupport"`
	}
	if json.Unmarshal(t.Execution, &e) == nil && (e.TaskSupport == "optional" || e.TaskSupport == "required") {
		return e.TaskSupport
	}
	return "forbidden"
}

// Conn is one live connection to an upstream MCP server. It is safe for
// concurrent use; calls are multiplexed by the protocol.
type Conn struct {
	server   *config.Server
	client   *client.Client
	protocol string
	cancel   context.CancelFunc // ends the connection's own context
	log      *slog.Logger

	baseHeaders func() map[string]string
	workspace   string // Options.Workspace

	results  *resultCap          // max_result_bytes, enforced while reading
	requests *requestGate        // stdio only: the child's requests to the host
	relays   *relays             // the calls in flight that relay to a client
	raw      *rawLines           // stdio only: Antler's own requests (rawstdio.go)
	wire     transport.Interface // the wrapped transport mcp-go uses
	inner    transport.Interface // mcp-go's own transport, under wire
	// resumed is the streamable HTTP session a Resume connection went
	// back to; its Close must not end that session.
	resumed string
	// keep: Close leaves the streamable HTTP session to the server.
	keep atomic.Bool

	capabilities json.RawMessage // the server's, from initialize or server/discover
	logging      bool            // capabilities declare logging
	instructions string
	requestSeq   atomic.Uint64 // ids of raw requests ("antler-N")
	clientInfo   mcp.Implementation
	meta         *protocolMeta // a 2026-07-28 connection's fixed _meta fields
	levelMu      sync.Mutex
	level        string // the level last set (logLevel)
	// metaJSON is the `"_meta":{...}` member of requests' params for
	// metaLevel, made without and with a Relay (see metaMember), under
	// levelMu.
	metaJSON  [2][]byte
	metaLevel string

	mu  sync.Mutex
	cmd *exec.Cmd // stdio only

	closeOnce sync.Once
	closeErr  error
	closing   atomic.Bool
	onExit    func()
	exitOnce  sync.Once
	onClose   func()
}

// exited runs when the child's stderr ends.
func (c *Conn) exited() {
	c.exitOnce.Do(func() {
		if !c.closing.Load() && c.onExit != nil {
			c.onExit()
		}
	})
}

// Dial connects and initializes. ctx bounds the whole handshake (the caller
// applies session_init_timeout); the connection itself lives until Close,
// never bound to ctx, because mcp-go ties a child's and a stream's lifetime
// to the context they were started with.
func Dial(ctx context.Context, srv *config.Server, opts Options) (*Conn, error) {
	c, stop, err := start(ctx, srv, opts, "")
	if err != nil {
		return nil, err
	}
	defer stop()
	c.clientInfo = mcp.Implementation{Name: ClientName, Version: opts.Version}
	version := srv.ProtocolVersion
	if version == "" && srv.Type == config.TransportStdio {
		if version, err = c.defaultRevision(ctx); err != nil {
			c.Close()
			return nil, dialError(ctx, "server/discover", err)
		}
	}
	initCtx, capt := withCapture(ctx, string(mcp.MethodInitialize), string(mcp.MethodServerDiscover))
	res, err := c.client.Initialize(initCtx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version,
		ClientInfo:      c.clientInfo,
	}})
	if err != nil {
		c.Close()
		return nil, dialError(ctx, "initialize", err)
	}
	if !stop() { // ctx ended while we finished: the connection was cancelled
		c.Close()
		return nil, dialError(ctx, "initialize", ctx.Err())
	}
	c.protocol = res.ProtocolVersion
	c.instructions = res.Instructions
	if mcp.IsModernProtocol(c.protocol) {
		if c.meta, err = c.newProtocolMeta(); err != nil {
			c.Close()
			return nil, fmt.Errorf("initialize: %w", err)
		}
	}
	if raw, _ := capt.last(); raw != nil {
		var r struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		if json.Unmarshal(raw, &r) == nil {
			c.capabilities = r.Capabilities
			var caps struct {
				Logging json.RawMessage `json:"logging"`
			}
			c.logging = json.Unmarshal(c.capabilities, &caps) == nil && len(caps.Logging) > 0 && string(caps.Logging) != "null"
		}
	}
	return c, nil
}

// discoverProbeTimeout bounds the server/discover probe of
// defaultRevision, as mcp-go bounds its own: a server older than the method
// may ignore it rather than answer that it does not know it.
const discoverProbeTimeout = 5 * time.Second

// defaultRevision is the revision an unpinned stdio connection asks for
// (protocol_version unset): the newest handshake revision, 2025-11-25, when
// the server's server/discover lists it among its supportedVersions and its
// capabilities do not declare the tasks extension, the one feature Antler
// uses that only the newer revisions have; and when the probe goes
// unanswered (a server that predates the method). Otherwise "": mcp-go
// negotiates as it does for any unpinned server, the newest both speak. On
// stdio 2026-07-28 buys nothing else Antler uses (there are no headers to
// route on, and the session is the process) and costs every call its
// per-request _meta and decorated result, about half again the server's CPU
// for a small call on an mcp-go server (RATIONALE.md, "The default revision
// on stdio"). An error means the connection is gone.
func (c *Conn) defaultRevision(ctx context.Context) (string, error) {
	caps, err := json.Marshal(c.client.GetClientCapabilities())
	if err != nil {
		return "", err
	}
	info, err := json.Marshal(c.clientInfo)
	if err != nil {
		return "", err
	}
	params := fmt.Appendf(nil, `{"_meta":{%q:%q,%q:%s,%q:%s}}`,
		mcp.MetaKeyProtocolVersion, mcp.LATEST_PROTOCOL_VERSION, mcp.MetaKeyClientCapabilities, caps, mcp.MetaKeyClientInfo, info)
	pctx, cancel := context.WithTimeout(ctx, discoverProbeTimeout)
	defer cancel()
	raw, err := c.sendID(pctx, "antler-discover", string(mcp.MethodServerDiscover), params, false)
	var rpcErr *RPCError
	switch {
	case err == nil:
		return preferLegacy(raw), nil
	case errors.As(err, &rpcErr):
		return "", nil // a legacy server, or one that names other revisions: mcp-go's to settle
	case ctx.Err() == nil && pctx.Err() != nil:
		return mcp.LATEST_LEGACY_PROTOCOL_VERSION, nil // unanswered: a server that predates the method
	}
	return "", err
}

// preferLegacy is defaultRevision's choice for a server's server/discover
// result.
func preferLegacy(discovered json.RawMessage) string {
	var d struct {
		SupportedVersions []string `json:"supportedVersions"`
		Capabilities      struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(discovered, &d) != nil {
		return ""
	}
	if v, ok := d.Capabilities.Extensions[TaskExtension]; ok && string(v) != "null" {
		return ""
	}
	if !slices.Contains(d.SupportedVersions, mcp.LATEST_LEGACY_PROTOCOL_VERSION) {
		return ""
	}
	return mcp.LATEST_LEGACY_PROTOCOL_VERSION
}

// start builds the connection and starts its transport, without the
// handshake; session, when not "", is the streamable HTTP session the
// transport resumes. stop ends the watch that aborts the start when ctx
// ends; it reports false if ctx ended first.
func start(ctx context.Context, srv *config.Server, opts Options, session string) (*Conn, func() bool, error) {
	if srv.Problem != nil {
		return nil, nil, srv.Problem
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("server", srv.Name)
	connCtx, cancel := context.WithCancel(context.Background())
	c := &Conn{server: srv, cancel: cancel, log: log, baseHeaders: opts.BaseHeaders, onExit: opts.OnExit, onClose: opts.OnClose, workspace: opts.Workspace, resumed: session}
	c.keep.Store(opts.KeepSession || session != "")
	limit := srv.MaxResultBytes
	if limit <= 0 {
		limit = opts.MaxResultBytes
	}
	if limit <= 0 {
		limit = DefaultMaxResultBytes
	}
	c.results = newResultCap(limit, log, c.exited)
	c.relays = newRelays(srv.Type != config.TransportStdio, opts.RelayTimeout, opts.OnNotification, log)

	inner, err := c.newTransport()
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	// Sampling and elicitation are always offered: a request no downstream
	// client can take is answered with an error (see relay.go). Roots are
	// not: a server would ask for them at once, with no call to relay to.
	// (On 2026-07-28, where each request declares its own, Antler's raw
	// requests offer them only when made for a client: request.go.)
	copts := []client.ClientOption{client.WithClientCapabilities(mcp.ClientCapabilities{
		Sampling:    &mcp.SamplingCapability{},
		Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}},
	}), client.WithSamplingHandler(inputHandler{c.relays}), client.WithElicitationHandler(inputHandler{c.relays})}
	if srv.ProtocolVersion != "" {
		if !mcp.IsValidProtocolVersion(srv.ProtocolVersion) {
			cancel()
			return nil, nil, fmt.Errorf("%w %q (known: %v)", ErrUnsupportedVersion, srv.ProtocolVersion, mcp.ValidProtocolVersions)
		}
		copts = append(copts, client.WithProtocolVersion(srv.ProtocolVersion))
	}
	c.inner = inner
	c.wire = wrapTransport(inner, c.results, c.requests, c.relays)
	c.client = client.NewClient(c.wire, copts...)

	// Abort the start (an SSE stream, a child's handshake) if ctx ends first.
	stop := context.AfterFunc(ctx, cancel)
	if err := c.client.Start(connCtx); err != nil {
		stop()
		c.Close()
		return nil, nil, dialError(ctx, "start", err)
	}
	return c, stop, nil
}

func dialError(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	return fmt.Errorf("%s: %w", op, classify(err))
}

func (c *Conn) newTransport() (transport.Interface, error) {
	srv := c.server
	switch srv.Type {
	case config.TransportStdio:
		env := make([]string, 0, len(srv.Env))
		for _, p := range srv.Env {
			env = append(env, p.Key+"="+p.Value)
		}
		return c.startStdio(env)
	// Headers go only through the header function: mcp-go applies static
	// headers after per-call ones, which would invert Antler's order.
	case config.TransportHTTP:
		c.requests = newRequestGate(c.replyHTTP)
		topts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaderFunc(c.headerFunc), transport.WithHTTPBasicClient(c.httpClient())}
		if c.resumed != "" {
			topts = append(topts, transport.WithSession(c.resumed))
		}
		return transport.NewStreamableHTTP(srv.URL, topts...)
	case config.TransportSSE:
		// mcp-go's SSE transport caps every response at 60 s unless told
		// otherwise; tool_call_timeout is the only bound Antler wants.
		return transport.NewSSE(srv.URL, transport.WithHeaderFunc(c.headerFunc), transport.WithResponseTimeout(sseResponseCap), transport.WithHTTPClient(c.httpClient()))
	}
	return nil, fmt.Errorf("unsupported transport %q", srv.Type)
}

// httpClient reads every response through the result cap, the event
// streams held back while the request gate is full, and follows no redirect
// (egress).
func (c *Conn) httpClient() *http.Client {
	return egress.Client(&sessionEndHeaders{base: &capRoundTripper{base: http.DefaultTransport, cap: c.results, gate: c.requests}, headers: c.headerFunc, keep: c.keep.Load})
}

// sessionEndHeaders sets the connection's headers on the DELETE that ends
// a streamable HTTP session: mcp-go's client sends it from Close without
// the headers it was given, so an upstream that needs them (a key) would
// refuse it and keep the session until its own idle timeout. Other
// requests carry them already.
type sessionEndHeaders struct {
	base    http.RoundTripper
	headers func(context.Context) map[string]string
	// keep reports whether to drop the DELETE instead (the session
	// outlives the connection: Options.KeepSession, Resume).
	keep func() bool
}

var _ http.RoundTripper = (*sessionEndHeaders)(nil)

func (t *sessionEndHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodDelete && t.keep() {
		return &http.Response{StatusCode: http.StatusNoContent, Status: "204 No Content", Body: http.NoBody,
			Header: http.Header{}, Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, nil
	}
	if req.Method == http.MethodDelete {
		req = req.Clone(req.Context())
		for k, v := range t.headers(req.Context()) {
			if req.Header.Get(k) == "" {
				req.Header.Set(k, v)
			}
		}
	}
	return t.base.RoundTrip(req)
}

// startStdio starts the child and hands mcp-go its pipes, its stdout read
// through the result cap: mcp-go reads a line whole before parsing it, so
// the bound must sit below it (see lineLimiter). mcp-go's own process
// handling is replaced by Close's.
func (c *Conn) startStdio(env []string) (transport.Interface, error) {
	cmd, err := c.command(context.Background(), c.server.Command, env, c.server.Args)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start: stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start: stdout pipe: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start: failed to start command: %w", err)
	}
	in := &lockedWriter{w: stdin}
	c.requests = newRequestGate(stdioReplies(in, c.abort))
	out := newLineLimiter(stdout, c.results, false)
	out.gate = c.requests
	c.raw = newRawLines(out, in)
	return transport.NewIO(c.raw, in, nil), nil
}

// abort ends a stdio session whose child stopped reading its stdin while
// it sent requests: the pool evicts it (OnExit) and the child's process
// group is killed, which fails the stuck writes and every call in flight.
func (c *Conn) abort() {
	c.log.Warn("upstream stopped reading the replies to its requests; ending the session", "reply_write_timeout", replyWriteTimeout)
	c.requests.close()
	c.exited()
	c.mu.Lock()
	cmd := c.cmd
	c.mu.Unlock()
	if cmd != nil && cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// command builds the stdio child: its own process group (so npx's node
// grandchild is killed with it), a parent-death signal, the operator's cwd,
// and only the inherited variables plus the configured env (plus, for npx,
// an npm prefix with no bin folder: see npx.go; and, in a workspace the host
// chose, what keeps the launcher from reading configuration there: see
// confine.go). The context mcp-go passes is deliberately not used: the child
// lives until Close.
func (c *Conn) command(_ context.Context, name string, env []string, args []string) (*exec.Cmd, error) {
	cmd := exec.Command(name, args...)
	base := make([]string, 0, len(inheritedEnv)+len(env))
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			base = append(base, k+"="+v)
		}
	}
	cmd.Env = append(base, env...)
	if isNpx(name) && cmd.Err == nil { // (a missing npx fails at Start)
		extra, err := c.npxEnv(cmd.Path, cmd.Env)
		if err != nil {
			return nil, err
		}
		cmd.Env = append(cmd.Env, extra...)
	}
	if c.workspace != "" {
		if err := c.confine(cmd, name, env); err != nil {
			return nil, err
		}
	}
	cmd.Dir = c.server.Cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = &lineLogger{log: c.log, onExit: c.exited, secrets: secretValues(c.server)}
	cmd.WaitDelay = 2 * time.Second
	c.mu.Lock()
	c.cmd = cmd
	c.mu.Unlock()
	return cmd, nil
}

// KeepSession makes Close leave the streamable HTTP session to the server
// (Options.KeepSession), for a connection dialled before the host knew the
// server keeps durable tasks in it.
func (c *Conn) KeepSession() { c.keep.Store(true) }

// ProtocolVersion is the negotiated MCP revision.
func (c *Conn) ProtocolVersion() string { return c.protocol }

// ListTools returns every tool the server lists (all pages), each as the
// server wrote it.
func (c *Conn) ListTools(ctx context.Context) ([]Tool, error) {
	ctx, capt := withCapture(ctx, string(mcp.MethodToolsList))
	if _, err := c.client.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
		if _, rpcErr := capt.last(); rpcErr != nil {
			return nil, fmt.Errorf("tools/list: %w", rpcErr)
		}
		return nil, fmt.Errorf("tools/list: %w", classify(err))
	}
	var tools []Tool
	for _, page := range capt.all() {
		var p struct {
			Tools []Tool `json:"tools"`
		}
		if err := json.Unmarshal(page, &p); err != nil {
			return nil, fmt.Errorf("tools/list: decode result: %w", err)
		}
		tools = append(tools, p.Tools...)
	}
	return tools, nil
}

// CallTool calls the tool named name (the server's own name) and returns the
// raw CallToolResult, sent raw (roundtrip.go). A JSON-RPC error from the
// server is an *RPCError.
func (c *Conn) CallTool(ctx context.Context, name string, args json.RawMessage, meta map[string]any) (json.RawMessage, error) {
	return c.callRaw(ctx, name, args, meta)
}

// ended is the error of a request that failed because its ctx ended, or
// nil if it failed for another reason.
func ended(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// The SSE transport's own timer can fire a moment before ctx is marked
	// done; a request that failed at its deadline timed out.
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return nil
}

// Close ends the connection. For stdio it closes the child's stdin, waits
// briefly, then kills the child's whole process group so nothing outlives it.
func (c *Conn) Close() error {
	c.closing.Store(true)
	c.closeOnce.Do(func() {
		c.cancel()
		if c.requests != nil {
			c.requests.close()
		}
		if c.raw != nil {
			c.raw.close()
		}
		if c.client != nil {
			c.closeErr = c.client.Close()
		}
		c.mu.Lock()
		cmd := c.cmd
		c.mu.Unlock()
		if cmd != nil && cmd.Process != nil {
			// The client closed stdin: give the child a moment to exit, then
			// kill the group (its id is the child's pid: Setpgid), leftovers
			// such as npx's node grandchild included, and reap it.
			waited := make(chan struct{})
			go func() {
				_ = cmd.Wait()
				close(waited)
			}()
			t := time.NewTimer(stdioExitGrace)
			select {
			case <-waited:
			case <-t.C:
			}
			t.Stop()
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			// The child itself too: one that left its group (setpgid) is
			// not in it, and Wait would wait for it forever. (It is not
			// reaped before Wait returns, so the pid is still its own.)
			_ = cmd.Process.Kill()
			<-waited
		}
		if c.onClose != nil {
			c.onClose()
		}
	})
	return c.closeErr
}

// classify maps transport failures to ErrConnectionClosed so callers can
// tell a dead connection from a failed call.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if IsConnectionClosed(err) {
		return fmt.Errorf("%w: %w", ErrConnectionClosed, err)
	}
	return err
}

// IsConnectionClosed reports whether err means the connection is gone (as
// opposed to a timeout or a failed call on a healthy connection).
func IsConnectionClosed(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrConnectionClosed),
		errors.Is(err, transport.ErrTransportClosed),
		errors.Is(err, transport.ErrSessionTerminated),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, os.ErrClosed):
		return true
	}
	return false
}

// lineLogger turns a child's stderr into debug log lines, with the values
// of the server's configured env masked: a server that prints its
// environment must not put a token into the host's log.
type lineLogger struct {
	onExit  func()
	secrets []string
	log     *slog.Logger
	buf     []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64<<10 { // a very long line: flush what we have
		l.emit(l.buf)
		l.buf = nil
	}
	return len(p), nil
}

// ReadFrom is what os/exec's stderr copier calls (io.Copy prefers it): it
// lets the logger see the end of the stream, which comes when the child and
// every process holding its stderr (npx's node) have exited, and report it
// without waiting for a call to fail.
func (l *lineLogger) ReadFrom(r io.Reader) (int64, error) {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += int64(k)
			l.Write(buf[:k])
		}
		if err != nil {
			if len(l.buf) > 0 {
				l.emit(l.buf)
				l.buf = nil
			}
			if l.onExit != nil {
				l.onExit()
			}
			if err == io.EOF {
				return n, nil
			}
			return n, err
		}
	}
}

func (l *lineLogger) emit(line []byte) {
	if len(line) == 0 {
		return
	}
	text := string(line)
	for _, v := range l.secrets {
		text = strings.ReplaceAll(text, v, "***")
	}
	l.log.Debug("upstream stderr", "line", text)
}

// secretValues are the configured env and header values of a server long
// enough to be worth masking (short ones like "1" would garble every line).
func secretValues(srv *config.Server) []string {
	var out []string
	for _, p := range append(append(config.Pairs(nil), srv.Env...), srv.Headers...) {
		switch p.Key {
		case "TMPDIR", "TMP", "TEMP":
			continue // the workspace's own folders, set by the host
		}
		if len(p.Value) >= 6 {
			out = append(out, p.Value)
		}
	}
	return out
}

// Resume opens a connection on an existing streamable HTTP protocol session
// (Mcp-Session-Id) without a handshake: a durable task's requests go on the
// session it was created on, as servers that keep tasks per session need.
// protocol is the revision that session negotiated. Closing the connection
// never ends the session (no DELETE is sent): the session belongs to its
// tasks, and the server expires it on its own terms. A server that has
// forgotten the session answers 404, which fails the request with an error
// wrapping ErrConnectionClosed.
func Resume(ctx context.Context, srv *config.Server, opts Options, session, protocol string) (*Conn, error) {
	if srv.Type != config.TransportHTTP || session == "" {
		return nil, fmt.Errorf("resume: only a streamable HTTP session can be resumed")
	}
	c, stop, err := start(ctx, srv, opts, session)
	if err != nil {
		return nil, err
	}
	stop()
	if h, ok := c.inner.(*transport.StreamableHTTP); ok && protocol != "" {
		h.SetProtocolVersion(protocol)
	}
	c.protocol = protocol
	if mcp.IsModernProtocol(protocol) {
		c.clientInfo = mcp.Implementation{Name: ClientName, Version: opts.Version}
		if c.meta, err = c.newProtocolMeta(); err != nil {
			c.Close()
			return nil, fmt.Errorf("resume: %w", err)
		}
	}
	return c, nil
}
