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
	"regexp"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/audit"
	"github.com/antler-mcp/antler/internal/catalog"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/configadmin"
	"github.com/antler-mcp/antler/internal/configfile"
	"github.com/antler-mcp/antler/internal/dashboard"
	"github.com/antler-mcp/antler/internal/launchpolicy"
	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/metrics"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/spectask"
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
	// ConfigFile guards extensions_config.json for the config API (nil: the
	// file the cache resolves, per request; created as ./extensions_config.json
	// when none exists).
	ConfigFile *configfile.File
	// LaunchPolicy screens stdio servers arriving through the config API
	// (nil: launchpolicy.FromEnv(os.LookupEnv), read per request).
	LaunchPolicy *launchpolicy.Policy
	// ConfigEnvAllowlist names the variables a config API request may
	// reference as "$NAME" where the stored server has no such reference
	// (nil: config.EnvAllowlistFromEnv(os.LookupEnv), read per request).
	ConfigEnvAllowlist *config.EnvAllowlist
	// HTTP bounds the HTTP edge: Host and Origin rules, timeouts, the
	// connection cap and per-principal limits (zero fields: defaults).
	HTTP HTTPOptions
	// Version is the host version the MCP endpoint reports in serverInfo.
	Version string
	// TaskInputTimeout bounds how long the MCP endpoint's tasks/result
	// waits for a client's answer to a task's question (0: its default).
	TaskInputTimeout time.Duration
	// Pprof serves net/http/pprof under /debug/pprof/ to admin principals
	// (settings debug.pprof; off by default).
	Pprof bool
	// Catalog, when set, serves the tool catalog's admin API
	// (/api/mcp/catalog); without it those routes answer 503.
	Catalog *catalog.Catalog
	// Metrics, when set, counts refused config edits; with ServeMetrics it
	// is also served at GET /metrics to admin principals (settings metrics:
	// true without a metrics_listen of its own).
	Metrics      *metrics.Metrics
	ServeMetrics bool
	// Audit, when set, records every config edit.
	Audit *audit.Logger
}

// Server is the gateway.
type Server struct {
	echo  *echo.Echo
	cache *toolcache.Cache
	auth  *principal.Authenticator
	log   *slog.Logger
	tasks *taskservice.Service
	// catalog is the tool catalog's admin API (nil: 503).
	catalog *catalog.Catalog
	// taskTools serves task submits and the host tools on both doors;
	// door is the MCP endpoint (/mcp, /sse, /messages).
	taskTools *tasktools.Tools
	door      *mcpserver.Server

	// streams ends long-lived responses (event streams) at shutdown, which
	// would otherwise hold the drain until the grace period runs out.
	streams     context.Context
	stopStreams context.CancelFunc

	// admin is the config admin API behind its routes.
	admin *configadmin.Admin

	// http, edge, callSlots and streamSlots are the HTTP edge's bounds.
	http        HTTPOptions
	edge        edge
	callSlots   *slots
	streamSlots *slots
}

// corsAllowHeaders are the request headers an allowed page may send: the
// REST door's and the MCP door's (a browser MCP client sends the
// protocol-version, session, method and name headers and resumes with
// Last-Event-ID). CORS has no wildcard for a header prefix, so the
// per-secret headers (mcpserver.HeaderSecretPrefix) cannot be listed: a
// page sends its secrets as the call's _meta (mcpserver.MetaSecrets).
var corsAllowHeaders = []string{echo.HeaderAuthorization, echo.HeaderContentType, "X-API-Key", echo.HeaderXRequestID,
	"Last-Event-ID", "Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", mcpserver.HeaderThreadID}

// New builds the gateway's routes and middleware.
func New(opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{echo: echo.New(), cache: opts.Cache, auth: opts.Auth, log: log, tasks: opts.Tasks, catalog: opts.Catalog}
	s.admin = configadmin.New(configadmin.Options{Tools: opts.Cache, File: opts.ConfigFile, LaunchPolicy: opts.LaunchPolicy,
		EnvAllowlist: opts.ConfigEnvAllowlist, Logger: log, Audit: opts.Audit, Metrics: opts.Metrics})
	s.streams, s.stopStreams = context.WithCancel(context.Background())
	s.http = opts.HTTP.withDefaults()
	var edgeErrs []error
	if s.edge, edgeErrs = newEdge(s.http); len(edgeErrs) > 0 { // settings validate these; an embedder's typo matches nothing
		log.Warn("ignoring invalid HTTP edge entries", "error", errors.Join(edgeErrs...).Error())
	}
	s.callSlots, s.streamSlots = newSlots(s.http.MaxCallsPerPrincipal), newSlots(s.http.MaxStreamsPerPrincipal)
	s.taskTools = tasktools.New(opts.Tasks, log)
	if s.taskTools.Configured() {
		// The host tools' names are theirs on both doors: an upstream tool
		// exposed under one is a name collision (see ReserveHostTools).
		opts.Cache.ReserveHostTools(tasktools.HostTools())
	}
	var specTasks *spectask.Service
	if opts.Tasks != nil {
		specTasks = spectask.New(opts.Tasks, log)
	}
	s.door = mcpserver.New(mcpserver.Options{Cache: opts.Cache, Tasks: s.taskTools, SpecTasks: specTasks, Logger: log, Version: opts.Version, AcquireCall: s.callSlots.acquire, MaxRoundsPerPrincipal: s.http.MaxCallsPerPrincipal, TaskInputTimeout: opts.TaskInputTimeout})
	e := s.echo
	e.HideBanner, e.HidePort = true, true
	// Never trust X-Forwarded-For from clients: the caller is the peer.
	e.IPExtractor = echo.ExtractIPDirect()
	e.HTTPErrorHandler = s.errorHandler
	// Echo composes its middleware on every request (a closure per
	// middleware per request); the gateway's are composed once here. The
	// edge chain runs for every request, routed or not, and ends in the
	// route Echo found; each route's own chain is built when it is added.
	edgeChain := []echo.MiddlewareFunc{s.requestID, s.logRequests, middleware.Recover(), s.checkEdge}
	if len(s.edge.origins) > 0 { // answer allowed pages' preflights; checkEdge already refused the rest
		edgeChain = append(edgeChain, middleware.CORSWithConfig(middleware.CORSConfig{AllowOrigins: s.edge.originList,
			AllowHeaders:  corsAllowHeaders,
			ExposeHeaders: []string{echo.HeaderXRequestID, "Mcp-Session-Id", "Mcp-Protocol-Version"}}))
	}
	edgeChain = append(edgeChain, middleware.BodyLimit(fmt.Sprint(MaxBodyBytes)), s.deadlines)
	edged := compose(func(c echo.Context) error { return c.Handler()(c) }, edgeChain...)
	e.Use(func(echo.HandlerFunc) echo.HandlerFunc { return edged }) // (its next is always c.Handler())

	root := routes{e: e}
	root.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	root.GET("/openapi.json", openAPIDocument(opts.Version))
	root.GET(dashboard.Prefix+"*", echo.WrapHandler(dashboard.Handler())) // the operator's web UI; it calls /api with the operator's key
	// The MCP endpoint: the same authentication and edge rules; its
	// streams are bounded per write, not per response.
	root.POST("/mcp", echo.WrapHandler(s.door.Streamable()), s.authenticate, s.streamWrites)
	root.GET("/mcp", echo.WrapHandler(s.door.Streamable()), s.authenticate, s.eventStream)
	root.DELETE("/mcp", echo.WrapHandler(s.door.Streamable()), s.authenticate)
	root.GET("/sse", echo.WrapHandler(s.door.SSE()), s.authenticate, s.eventStream)
	root.POST("/messages", echo.WrapHandler(s.door.Messages()), s.authenticate)
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
	if opts.Metrics != nil && opts.ServeMetrics {
		root.GET(metricsPath, echo.WrapHandler(opts.Metrics.Handler()), s.authenticate, adminOnly(metricsPath))
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
	}
	srv.RegisterOnShutdown(s.stopStreams)
	srv.RegisterOnShutdown(s.door.Close)
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

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// requestID takes a well-formed X-Request-ID from the caller or makes one,
// echoes it, and keeps it in the Echo context for the gateway's logs.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get(echo.HeaderXRequestID)
		if !requestIDPattern.MatchString(id) {
			var b [12]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		c.Set("request_id", id)
		return next(c)
	}
}

func requestIDFrom(c echo.Context) string {
	id, _ := c.Get("request_id").(string)
	return id
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

const principalKey = "principal"

// authenticate resolves the caller. With no keys configured, only loopback
// peers are served, whatever address the listener has.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.auth.Open() {
			if ip := net.ParseIP(c.RealIP()); ip == nil || !ip.IsLoopback() {
				return apierror.New(http.StatusForbidden, "this gateway has no API keys and serves loopback callers only")
			}
		}
		p, err := s.auth.Authenticate(c.Request().Header.Get("Authorization"), c.Request().Header.Get("X-API-Key"))
		if err != nil {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="antler"`)
			return apierror.Wrap(err, http.StatusUnauthorized, "%s", err.Error())
		}
		c.Set(principalKey, p)
		req := c.Request()
		c.SetRequest(req.WithContext(principal.NewContext(req.Context(), p)))
		return next(c)
	}
}

func principalFrom(c echo.Context) principal.Principal {
	p, _ := c.Get(principalKey).(principal.Principal)
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
func (s *Server) Close() { s.door.Close() }
