// Package gateway is the Echo HTTP API that agents and operators call: tool
// listing and calls, routing hints, server status and cache reset. It is an
// untrusted boundary: every body is validated, every error is a JSON
// {"error": ...} without secrets, and callers are principals from API keys.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/configadmin"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/tasktools"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// MaxBodyBytes bounds a request body.
const MaxBodyBytes = 4 << 20

// Options configure a Server.
type Options struct {
	Cache  *toolcache.Cache
	Auth   *principal.Authenticator
	Logger *slog.Logger
	// Tasks is the durable task runtime (nil when mcp_tasks is off). With
	// it, New reserves the host tools' names in Cache (see
	// toolcache.Cache.ReserveHostTools).
	Tasks *taskservice.Service
	// Admin serves the config admin API and the tool catalog's (nil: one
	// over Cache with nothing else set: the file the cache resolves, the
	// launch policy and $VAR allowlist read from the environment per
	// request, and no catalog, so its routes answer 503).
	Admin *configadmin.Admin
	// HTTP bounds the HTTP edge: Host and Origin rules, timeouts, the
	// connection cap and per-principal limits (zero fields: defaults).
	HTTP HTTPOptions
	// MCP, when set, builds the MCP endpoint served at /mcp, /sse and
	// /messages. It is given the gateway's per-principal slots, so one cap
	// of tool calls and one of open streams hold across both doors. Nil:
	// those routes are not served.
	MCP func(slots DoorSlots) MCPDoor
	// Pages are served to GET without a key, under the edge's rules: the
	// OpenAPI document, the dashboard's files. A path ending in "*" serves
	// every path under it. A page must hold no secret or configuration.
	Pages map[string]http.Handler
	// Metrics, when set, is served at GET /metrics to admin principals: the
	// series name every server and plugin and show their traffic.
	Metrics http.Handler
	// Pprof serves net/http/pprof under /debug/pprof/ to admin principals
	// (settings debug.pprof; off by default).
	Pprof bool
}

// DoorSlots are the gateway's per-principal caps an MCP door shares: the
// tool calls a caller has in flight (http.per_principal.max_concurrent_calls)
// and the streams it holds open (max_event_streams), the door's POSTs that
// stay open until an event included.
type DoorSlots struct {
	Calls, Streams *principal.Slots
}

// MCPDoor is the MCP endpoint the gateway routes to (mcpserver.Server).
type MCPDoor interface {
	// Streamable serves POST, GET and DELETE /mcp.
	Streamable() http.Handler
	// SSE serves legacy HTTP+SSE's GET /sse, Messages its POST /messages.
	SSE() http.Handler
	Messages() http.Handler
	// CORSHeaders are the request headers the door's browser clients send
	// (allow) and the answer headers they read (expose).
	CORSHeaders() (allow, expose []string)
	// Close ends the door's sessions and streams.
	Close()
}

// Server is the gateway.
type Server struct {
	echo  *echo.Echo
	cache *toolcache.Cache
	auth  *principal.Authenticator
	log   *slog.Logger
	tasks *taskservice.Service
	// taskTools serves task submits and the host tools on the REST door;
	// door is the MCP endpoint (nil: not served).
	taskTools *tasktools.Tools
	door      MCPDoor

	// streams ends long-lived responses (event streams) at shutdown, which
	// would otherwise hold the drain until the grace period runs out.
	streams     context.Context
	stopStreams context.CancelFunc

	// admin is the config admin API behind its routes.
	admin *configadmin.Admin

	// http, edge, callSlots and streamSlots are the HTTP edge's bounds.
	http        HTTPOptions
	edge        edge
	callSlots   *principal.Slots
	streamSlots *principal.Slots
	// allowedHost is the last Host header hostAllowed accepted: the edge's
	// rules never change, so the same value is accepted again at once.
	allowedHost atomic.Pointer[string]
	// requestIDs numbers the requests that bring no X-Request-ID.
	requestIDs requestIDs
}

// corsAllowHeaders are the request headers an allowed page may send to the
// REST door (the MCP door adds its own, MCPDoor.CORSHeaders).
var corsAllowHeaders = []string{echo.HeaderAuthorization, echo.HeaderContentType, "X-API-Key", echo.HeaderXRequestID}

// New builds the gateway's routes and middleware.
func New(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{echo: echo.New(), cache: opts.Cache, auth: opts.Auth, log: log, tasks: opts.Tasks, admin: opts.Admin}
	if s.admin == nil {
		s.admin = configadmin.New(configadmin.Options{Tools: opts.Cache, Logger: log})
	}
	s.streams, s.stopStreams = context.WithCancel(context.Background())
	s.requestIDs.init()
	s.http = opts.HTTP.withDefaults()
	var edgeErrs []error
	if s.edge, edgeErrs = newEdge(s.http); len(edgeErrs) > 0 { // settings validate these; an embedder's typo matches nothing
		log.Warn("ignoring invalid HTTP edge entries", "error", errors.Join(edgeErrs...).Error())
	}
	s.callSlots, s.streamSlots = principal.NewSlots(s.http.MaxCallsPerPrincipal), principal.NewSlots(s.http.MaxStreamsPerPrincipal)
	s.taskTools = tasktools.New(opts.Tasks, log)
	if s.taskTools.Configured() {
		// The host tools' names are theirs on both doors: an upstream tool
		// exposed under one is a name collision (see ReserveHostTools).
		opts.Cache.ReserveHostTools(tasktools.HostTools())
	}
	if opts.MCP != nil {
		s.door = opts.MCP(DoorSlots{Calls: s.callSlots, Streams: s.streamSlots})
	}
	e := s.echo
	e.HideBanner, e.HidePort = true, true
	// Never trust X-Forwarded-For from clients: the caller is the peer.
	e.IPExtractor = echo.ExtractIPDirect()
	e.HTTPErrorHandler = s.errorHandler
	// Echo composes its middleware on every request (a closure per
	// middleware per request); the gateway's are composed once here. The
	// edge chain runs for every request, routed or not, and ends in the
	// route Echo found; each route's own chain is built when it is added.
	edgeChain := []echo.MiddlewareFunc{s.deadlines, s.requestID, s.logRequests, middleware.Recover(), s.checkEdge}
	if len(s.edge.origins) > 0 { // answer allowed pages' preflights; checkEdge already refused the rest
		allow, expose := slices.Clone(corsAllowHeaders), []string{echo.HeaderXRequestID}
		if s.door != nil {
			a, x := s.door.CORSHeaders()
			allow, expose = append(allow, a...), append(expose, x...)
		}
		edgeChain = append(edgeChain, middleware.CORSWithConfig(middleware.CORSConfig{AllowOrigins: s.edge.originList,
			AllowHeaders: allow, ExposeHeaders: expose}))
	}
	edgeChain = append(edgeChain, middleware.BodyLimit(fmt.Sprint(MaxBodyBytes)), s.wholeBody)
	edged := compose(func(c echo.Context) error { return c.Handler()(c) }, edgeChain...)
	e.Use(func(echo.HandlerFunc) echo.HandlerFunc { return edged }) // (its next is always c.Handler())

	root := routes{e: e}
	root.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	for path, h := range opts.Pages {
		root.GET(path, echo.WrapHandler(h))
	}
	if s.door != nil {
		// The MCP endpoint: the same authentication and edge rules; its
		// streams are bounded per write, not per response.
		root.POST("/mcp", echo.WrapHandler(s.door.Streamable()), s.authenticate, s.streamWrites)
		root.GET("/mcp", echo.WrapHandler(s.door.Streamable()), s.authenticate, s.eventStream)
		root.DELETE("/mcp", echo.WrapHandler(s.door.Streamable()), s.authenticate)
		root.GET("/sse", echo.WrapHandler(s.door.SSE()), s.authenticate, s.eventStream)
		root.POST("/messages", echo.WrapHandler(s.door.Messages()), s.authenticate)
	}
	e.Group("/api", s.authenticate) // its catch-all: an unknown /api path is authenticated before the 404
	api := routes{e: e, prefix: "/api", chain: []echo.MiddlewareFunc{s.authenticate}}
	api.GET("/mcp/tools", s.listTools)
	api.POST("/mcp/tools/:name/call", s.callTool, s.callLimit)
	api.GET("/mcp/routing-hints", s.routingHints)
	api.GET("/mcp/servers", s.servers)
	api.POST("/mcp/cache/reset", s.resetCache, configAdmin)
	api.GET("/mcp/catalog", s.listCatalog, configAdmin)
	api.POST("/mcp/catalog/approve", s.approveCatalog, configAdmin)
	api.GET("/mcp/config", s.getConfig, configAdmin)
	api.PUT("/mcp/config", s.putConfig, configAdmin)
	api.PATCH("/mcp/config", s.patchConfig, configAdmin)
	api.POST("/mcp/config/servers", s.addServers, configAdmin)
	api.PUT("/mcp/config/server", s.putServer, configAdmin)
	api.DELETE("/mcp/config/servers/*", s.deleteServer, configAdmin)
	api.GET("/threads/:thread_id/mcp-tasks", s.listTasks)
	api.GET("/threads/:thread_id/mcp-tasks/events", s.taskEvents, s.eventStream)
	api.GET("/threads/:thread_id/mcp-tasks/:task_id", s.getTask)
	api.POST("/threads/:thread_id/mcp-tasks/:task_id/cancel", s.cancelTask)
	api.POST("/threads/:thread_id/mcp-tasks/:task_id/input", s.answerTask)
	if opts.Pprof {
		s.routePprof()
	}
	if opts.Metrics != nil {
		root.GET(metricsPath, echo.WrapHandler(opts.Metrics), s.authenticate, adminOnly(metricsPath))
	}
	return s
}

// compose wraps h in chain, the first outermost, as Echo does per request.
func compose(h echo.HandlerFunc, chain ...echo.MiddlewareFunc) echo.HandlerFunc {
	for i := len(chain) - 1; i >= 0; i-- {
		h = chain[i](h)
	}
	return h
}

// routes adds routes under prefix with their middleware (chain, then the
// route's own) composed once, when the route is added.
type routes struct {
	e      *echo.Echo
	prefix string
	chain  []echo.MiddlewareFunc
}

func (r routes) add(method, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.e.Add(method, r.prefix+path, compose(compose(h, m...), r.chain...))
}

func (r routes) GET(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.add(http.MethodGet, path, h, m...)
}

func (r routes) POST(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.add(http.MethodPost, path, h, m...)
}

func (r routes) PUT(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.add(http.MethodPut, path, h, m...)
}

func (r routes) PATCH(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.add(http.MethodPatch, path, h, m...)
}

func (r routes) DELETE(path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	r.add(http.MethodDelete, path, h, m...)
}

// Handler returns the gateway as an http.Handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s.echo }

// CheckListen refuses an address beyond loopback when no API keys are
// configured: without keys every caller is an admin.
func CheckListen(addr string, auth *principal.Authenticator) error {
	if !auth.Open() {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if !principal.IsLoopbackHost(host) {
		return fmt.Errorf("refusing to listen on %s without API keys: every caller would be an admin; listen on 127.0.0.1 or configure auth.keys in the settings file", addr)
	}
	return nil
}

// Serve answers on ln until ctx ends, then stops accepting, lets in-flight
// requests finish within grace, and returns. It holds at most
// HTTPOptions.MaxConnections connections; headers and idle connections are
// bounded server-wide, bodies and writes per request (see deadlines).
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	srv := &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: s.http.ReadHeaderTimeout,
		IdleTimeout:       s.http.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if lc, ok := c.(*limitedConn); ok {
				return context.WithValue(ctx, connKey{}, lc) // for deadlines
			}
			return ctx
		},
	}
	srv.RegisterOnShutdown(s.stopStreams)
	srv.RegisterOnShutdown(s.Close)
	errc := make(chan error, 1)
	limited := newLimitListener(ln, s.http.MaxConnections)
	go func() { errc <- srv.Serve(limited) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down: waiting for in-flight requests", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("in-flight requests did not finish in time; closing them", "error", err)
		_ = srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// requestIDs makes the X-Request-ID of a request that brings none: a
// random prefix per process and a counter, 24 hex digits. An id names a
// request in the logs and is no secret, so it costs no random read per
// request, and is still unique across restarts.
type requestIDs struct {
	prefix [12]byte // 6 random bytes in hex
	n      atomic.Uint64
}

// init draws the process's prefix.
func (r *requestIDs) init() {
	var b [6]byte
	_, _ = rand.Read(b[:])
	hex.Encode(r.prefix[:], b[:])
}

// next is a new id.
func (r *requestIDs) next() string {
	var b [24]byte
	copy(b[:], r.prefix[:])
	n := r.n.Add(1)
	for i := len(b) - 1; i >= len(r.prefix); i-- {
		b[i] = "0123456789abcdef"[n&0xf]
		n >>= 4
	}
	return string(b[:])
}

// wellFormedRequestID reports whether a caller's X-Request-ID is kept: 1 to
// 64 letters, digits, '.', '_' or '-' (nothing a log line would misread).
func wellFormedRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// requestID takes a well-formed X-Request-ID from the caller or makes one,
// and echoes it; the gateway's logs read it from the answer's header.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !wellFormedRequestID(id) {
			id = s.requestIDs.next()
		}
		c.Response().Header()[echo.HeaderXRequestID] = []string{id}
		return next(c)
	}
}

func requestIDFrom(c echo.Context) string {
	return c.Response().Header().Get(echo.HeaderXRequestID)
}

func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		status := c.Response().Status
		level := slog.LevelInfo
		if c.Path() == "/healthz" {
			level = slog.LevelDebug
		}
		if status >= 500 {
			level = slog.LevelWarn
		}
		// At the usual warn level an ordinary request logs nothing: skip
		// building its attributes (a dozen allocations per call).
		if !s.log.Enabled(c.Request().Context(), level) {
			return nil
		}
		s.log.Log(c.Request().Context(), level, "request",
			"request_id", requestIDFrom(c),
			"method", c.Request().Method,
			"route", c.Path(),
			"status", status,
			"duration_ms", float64(time.Since(start).Microseconds())/1000,
			"remote", c.RealIP())
		return nil
	}
}

// authenticate resolves the caller. With no keys configured, only loopback
// peers are served, whatever address the listener has.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.auth.Open() {
			if ip, err := netip.ParseAddr(c.RealIP()); err != nil || !ip.IsLoopback() {
				return apierror.New(http.StatusForbidden, "this gateway has no API keys and serves loopback callers only")
			}
		}
		p, err := s.auth.Authenticate(c.Request().Header.Get("Authorization"), c.Request().Header.Get("X-API-Key"))
		if err != nil {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="antler"`)
			return apierror.Wrap(err, http.StatusUnauthorized, "%s", err.Error())
		}
		req := c.Request()
		c.SetRequest(req.WithContext(principal.NewContext(req.Context(), p)))
		return next(c)
	}
}

// principalFrom is the principal authenticate put in c's request context
// (the zero principal before it ran).
func principalFrom(c echo.Context) principal.Principal {
	p, _ := principal.FromContext(c.Request().Context())
	return p
}

// configAdmin guards the configuration API and the cache reset with
// DeerFlow's message.
func configAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !principalFrom(c).IsAdmin() {
			return apierror.New(http.StatusForbidden, "Admin privileges required to manage MCP configuration.")
		}
		return next(c)
	}
}

// Close ends the MCP endpoint's sessions and streams (Serve does it at
// shutdown; for embedders and tests that serve Handler themselves).
func (s *Server) Close() {
	if s.door != nil {
		s.door.Close()
	}
}
