package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/audit"
	"github.com/antler-mcp/antler/internal/catalog"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/configadmin"
	"github.com/antler-mcp/antler/internal/dashboard"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/envvar"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/launchpolicy"
	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/metrics"
	"github.com/antler-mcp/antler/internal/openapi"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/task/spectasks"
	"github.com/antler-mcp/antler/internal/taskplugin"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/tasktools"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/internal/tracing"
)

// hostFlags are the flags serve and doctor share: where the configuration,
// the settings, the data and the database are.
type hostFlags struct {
	fs                                    *flag.FlagSet
	config, settingsPath, listen, dataDir *string
	db                                    *string
}

func registerHostFlags(fs *flag.FlagSet) hostFlags {
	return hostFlags{fs: fs,
		config:       fs.String("config", "", "extensions_config.json path (default: $ANTLER_EXTENSIONS_CONFIG, $DEER_FLOW_EXTENSIONS_CONFIG_PATH, ./extensions_config.json, ./mcp_config.json)"),
		settingsPath: fs.String("settings", "", "host settings file (default: $ANTLER_SETTINGS, ./antler.yaml)"),
		listen:       fs.String("listen", "", "listen address (overrides settings)"),
		dataDir:      fs.String("data", "", "data directory (overrides settings)"),
		db:           fs.String("db", "", "database: empty for SQLite in the data directory, or postgres://... (overrides settings)"),
	}
}

// settings loads the settings file with the flags given on top, and
// returns the file's path ("" for the defaults).
func (h hostFlags) settings() (settings.Settings, string, error) {
	sp, err := settings.ResolvePath(*h.settingsPath, envvar.OS)
	if err != nil {
		return settings.Settings{}, "", err
	}
	st, err := settings.Load(sp, envvar.OS)
	if err != nil {
		return st, sp, err
	}
	h.fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "listen":
			st.Listen = *h.listen
		case "data":
			st.DataDir = *h.dataDir
		case "db":
			st.Database = *h.db
		}
	})
	if st.Database != "" && !strings.HasPrefix(st.Database, "postgres://") && !strings.HasPrefix(st.Database, "postgresql://") {
		return st, sp, errors.New("database: must be empty (SQLite in the data directory) or a postgres:// URL")
	}
	return st, sp, nil
}

func cmdServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hf := registerHostFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfgPath := hf.config
	st, _, err := hf.settings()
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	log := newLogger(stderr, st.LogLevel)
	grace, err := parseDuration(st.ShutdownTimeout, 10*time.Second)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	auth := principal.New(st.Auth.Keys)
	if err := gateway.CheckListen(st.Listen, auth); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	if err := os.MkdirAll(st.DataDir, 0o700); err != nil {
		fmt.Fprintln(stderr, "error: data directory:", err)
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The store holds the durable tasks (when mcp_tasks is on) and the tool
	// catalog (always: every server is pinned unless its tool_catalog is off).
	dsn := st.Database
	if dsn == "" {
		dsn = filepath.Join(st.DataDir, "antler.db")
	}
	store, err := taskstore.Open(ctx, dsn, taskstore.WithTrackingDegradedAfter(st.MCPTasks.TrackingDegradedAfterErrors))
	if err != nil {
		fmt.Fprintln(stderr, "error: task store:", err)
		return 1
	}
	defer store.Close()

	idle, _ := time.ParseDuration(st.StdioPool.IdleTimeout) // validated with the settings
	var m *metrics.Metrics
	if st.Metrics {
		m = metrics.New()
	}
	auditLog, err := audit.Open(st.AuditLog)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	defer auditLog.Close()
	// Traces are off unless OTEL_TRACES_EXPORTER names an exporter; the
	// spans not exported yet are flushed as serve exits.
	tracer, err := tracing.FromEnv(ctx, tracing.Options{Console: stderr})
	if err != nil {
		fmt.Fprintln(stderr, "error: tracing:", err)
		return 1
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tracer.Shutdown(sctx); err != nil {
			log.Warn("trace export at shutdown failed", "error", err.Error())
		}
	}()
	cat := catalog.New(store, catalog.Options{Logger: log, Audit: auditLog, Metrics: m})
	progress, done := discoveryProgress(stderr)
	onDiscovered := func(d toolcache.Discovered) {
		m.Discovery(d.Server, d.Err, d.Elapsed)
		if progress != nil {
			progress(d)
		}
	}
	// The task store, once the task runtime has opened it.
	var taskStore atomic.Pointer[taskstore.Store]
	cache := toolcache.New(toolcache.Options{
		ConfigPath:     *cfgPath,
		Logger:         log,
		Version:        versionString(),
		PluginCacheDir: filepath.Join(st.DataDir, "wasm-cache"),
		SpecTasks:      st.MCPTasks.Enabled,
		DataDir:        st.DataDir,
		MaxSessions:    st.StdioPool.MaxSessions,
		IdleTimeout:    idle,
		// A stdio session holding an active durable task is never closed
		// for room or idleness: the task lives in that process.
		MaxSessionsPerUser: st.StdioPool.MaxSessionsPerUser,
		Pinned:             activeTaskIn(&taskStore),
		MaxResultBytes:     st.MaxResultBytes,
		OnDiscovered:       onDiscovered,
		Metrics:            m,
		Audit:              auditLog,
		Catalog:            cat,
		Tracer:             tracer,
	})
	defer cache.Close() // closes upstreams: no child process outlives the host
	if st.MCPTasks.Enabled {
		// Before the first discovery, so it is not redone when the gateway
		// reserves the same names.
		cache.ReserveHostTools(tasktools.HostTools())
	}
	snap, err := cache.Load(ctx)
	done()
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	for _, s := range snap.Servers {
		if s.State == toolcache.StateConnected {
			log.Info("MCP server connected", "server", s.Name, "transport", s.Transport, "tools", s.Tools, "protocol", s.ProtocolVersion)
		}
	}

	tasks, closeTasks, err := startTasks(ctx, st, store, dsn, cache, snap, log, &taskStore, m, auditLog, tracer)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	defer closeTasks()

	ln, err := net.Listen("tcp", st.Listen)
	if err != nil {
		fmt.Fprintln(stderr, "error: listen:", err)
		return 1
	}
	// The config API edits the file the cache resolves (created as
	// ./extensions_config.json when there is none); the stdio launch policy
	// and the $VAR allowlist are read from the environment once.
	envRefs := config.EnvAllowlistFromEnv(os.LookupEnv)
	admin := configadmin.New(configadmin.Options{Tools: cache, LaunchPolicy: launchpolicy.FromEnv(os.LookupEnv), EnvAllowlist: &envRefs,
		Logger: log, Audit: auditLog, Metrics: m, Catalog: cat})
	gopts := gateway.Options{Cache: cache, Auth: auth, Logger: log, Tasks: tasks, Admin: admin, HTTP: gateway.HTTPOptionsFrom(st.HTTP),
		Pprof: st.Debug.Pprof, Pages: pages(versionString())}
	gopts.MCP = func(slots gateway.DoorSlots) gateway.MCPDoor {
		return mcpserver.New(mcpserver.Options{Cache: cache, Tasks: tasks, Logger: log, Version: versionString(), CallSlots: slots.Calls, StreamSlots: slots.Streams,
			TaskInputTimeout: st.TaskInputTimeout(), DefaultThread: mcpserver.DefaultThread(st.MCPEndpoint.DefaultThread)})
	}
	if m != nil && st.MetricsListen == "" {
		gopts.Metrics = m.Handler()
	}
	srv := gateway.New(gopts)
	if m != nil && st.MetricsListen != "" {
		stopMetrics, err := serveMetrics(st.MetricsListen, m, log)
		if err != nil {
			fmt.Fprintln(stderr, "error: metrics_listen:", err)
			return 1
		}
		defer stopMetrics()
	}
	dataAbs, _ := filepath.Abs(st.DataDir)
	log.Info("antler listening", "addr", "http://"+ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp", "config", snap.ConfigPath, "data", dataAbs, "tools", len(snap.Tools))
	printTryIt(stdout, ln.Addr().String(), snap, auth.Open())

	if err := srv.Serve(ctx, ln, grace); err != nil {
		log.Error("gateway stopped", "error", err)
		return 1
	}
	log.Info("closing upstream MCP servers")
	return 0
}

// printTryIt shows the curl lines that list and call the tools.
func printTryIt(w io.Writer, addr string, snap *toolcache.ToolSet, open bool) {
	auth := ""
	if !open {
		auth = ` -H "Authorization: Bearer $ANTLER_KEY"`
	}
	fmt.Fprintf(w, "\nAntler is serving %d tools on http://%s\n\n", len(snap.Tools), addr)
	fmt.Fprintf(w, "  MCP endpoint: http://%s/mcp\n    (streamable HTTP, every revision 2024-11-05…2026-07-28; legacy HTTP+SSE at http://%s/sse)\n", addr, addr)
	if !open {
		fmt.Fprintf(w, "    send the key as the header Authorization: Bearer $ANTLER_KEY\n")
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  List the tools:\n    curl -s%s http://%s/api/mcp/tools\n\n", auth, addr)
	if len(snap.Tools) > 0 {
		name := snap.Tools[0].Name
		args := `{}`
		for _, t := range snap.Tools {
			if strings.HasSuffix(t.Name, "echo") {
				name, args = t.Name, `{"message":"hello from antler"}`
				break
			}
		}
		fmt.Fprintf(w, "  Call one:\n    curl -s%s -X POST http://%s/api/mcp/tools/%s/call -H 'Content-Type: application/json' -d '{\"arguments\":%s}'\n\n", auth, addr, name, args)
	}
	for _, t := range snap.Tools {
		if t.TaskToolset != nil {
			args := `{}` // see the tool's input_schema
			if strings.Contains(string(t.InputSchema), `"topic"`) {
				args = `{"topic":"quarterly revenue"}` // the quick start's reports server
			}
			fmt.Fprintf(w, "  Start a durable background task (%s), then follow it:\n    curl -s%s -X POST http://%s/api/mcp/tools/%s/call -H 'Content-Type: application/json' -d '{\"arguments\":%s}'\n    curl -s%s http://%s/api/threads/default/mcp-tasks\n    curl -sN%s -H 'Last-Event-ID: 0' http://%s/api/threads/default/mcp-tasks/events\n\n",
				t.TaskToolset.Name, auth, addr, t.Name, args, auth, addr, auth, addr)
			break
		}
	}
	fmt.Fprintf(w, "  Server status:\n    curl -s%s http://%s/api/mcp/servers\n\n", auth, addr)
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
}

// startTasks opens the task store and starts the durable task runtime when
// mcp_tasks is enabled. Task toolsets configured while it is off are an error:
// their submit tools would otherwise run as plain synchronous calls.
func startTasks(ctx context.Context, st settings.Settings, store *taskstore.Store, dsn string, cache *toolcache.Cache, snap *toolcache.ToolSet, log *slog.Logger, opened *atomic.Pointer[taskstore.Store], m *metrics.Metrics, auditLog *audit.Logger, tracer *tracing.Tracer) (*taskservice.Service, func(), error) {
	// The task-enabled configuration is frozen as the host started with it:
	// a later edit of it is refused for task calls until a restart.
	frozen := snap.TaskFreeze
	taskServers := frozen.Servers()
	if !st.MCPTasks.Enabled {
		if len(taskServers) > 0 {
			return nil, nil, fmt.Errorf("MCP task_toolsets or task drivers are configured (server %s), so mcp_tasks.enabled=true is required in the settings; Antler will not silently expose these tools as synchronous calls", strings.Join(taskServers, ", "))
		}
		return nil, func() {}, nil
	}
	opened.Store(store)
	var drivers task.Registry
	if err := drivers.Register(ordinary.Name, ordinary.New(taskservice.CacheCaller{Cache: cache, Frozen: &frozen})); err != nil {
		return nil, nil, err
	}
	spec := spectasks.New(taskservice.SpecCaller{Cache: cache}, spectasks.Options{MaxPollInterval: st.MCPTasks.Config.MaxPollBackoff()})
	if err := drivers.Register(spectasks.Name, spec); err != nil {
		return nil, nil, err
	}
	ext := spectasks.NewExtension(taskservice.SpecCaller{Cache: cache}, spectasks.Options{MaxPollInterval: st.MCPTasks.Config.MaxPollBackoff()})
	if err := drivers.Register(spectasks.ExtensionName, ext); err != nil {
		return nil, nil, err
	}
	pluginDrivers, err := taskplugin.Load(ctx, snap.TaskDrivers, taskservice.CacheCaller{Cache: cache, Frozen: &frozen}, &drivers,
		taskplugin.Options{CacheDir: filepath.Join(st.DataDir, "wasm-cache-drivers"), Logger: log, Audit: auditLog, Metrics: m})
	if err != nil {
		return nil, nil, err
	}
	opts := taskservice.Options{Store: store, Drivers: &drivers, Config: st.MCPTasks.Config, Logger: log, Metrics: m, Audit: auditLog, Tracer: tracer}
	if n := st.MCPTasks.Notifications; n.WebhookURL != "" {
		opts.Notifier = &tasknotify.Webhook{URL: n.WebhookURL, Secret: []byte(n.WebhookSecret)}
	}
	svc := taskservice.New(opts)
	svc.Start()
	log.Info("MCP task runtime started", "store", redactDSN(dsn), "owner", svc.Owner(), "webhook", opts.Notifier != nil)
	return svc, func() { svc.Stop(); m.SetTaskStats(nil); pluginDrivers.Close(); opened.Store(nil) }, nil
}

// activeTaskIn is the session pool's pinned hook: whether the task store
// (once open) holds an active task of server in user's thread. When the
// store cannot answer, the session is kept: closing it could lose a task.
func activeTaskIn(store *atomic.Pointer[taskstore.Store]) func(server, user, thread string) bool {
	return func(server, user, thread string) bool {
		s := store.Load()
		if s == nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		active, err := s.HasActive(ctx, server, task.Scope{User: user, Thread: thread})
		return active || err != nil
	}
}

// redactDSN drops a database URL's password for the log.
func redactDSN(dsn string) string {
	return dispatch.Redact(dsn)
}

// serveMetrics serves the metrics alone at /metrics on addr, without
// authentication, until the returned stop is called.
func serveMetrics(addr string, m *metrics.Metrics, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "error", err)
		}
	}()
	log.Info("metrics listening", "addr", "http://"+ln.Addr().String()+"/metrics")
	return func() { hs.Close() }, nil
}

// pages are what the gateway serves without a key: the OpenAPI document
// and the operator's web UI (which calls /api with the operator's key).
func pages(version string) map[string]http.Handler {
	return map[string]http.Handler{openapi.Path: openapi.Handler(version), dashboard.Prefix + "*": dashboard.Handler()}
}
