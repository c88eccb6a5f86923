// Package testtask builds a real durable task runtime for tests: the tool
// cache over a config file, a SQLite task store and the task service with
// the ordinary driver, both spec tasks drivers (2025-11-25 and the
// 2026-07-28 extension) and the plugin drivers the config names, every part
// closed when the test ends.
package testtask

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/envvar"
	"github.com/antler-mcp/antler/internal/eventually"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/task/spectasks"
	"github.com/antler-mcp/antler/internal/taskplugin"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/internal/tracing"
)

// ReportsToolset is the task_toolsets entry of the reports example server
// (examples/mcpserver/reports), to put in its server's config.
const ReportsToolset = `"task_toolsets": [{"name": "report-generation",
	"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report"}]`

// ReportsAnswerToolset is ReportsToolset with the server's respond_tool,
// so its tasks take answers.
const ReportsAnswerToolset = `"task_toolsets": [{"name": "report-generation",
	"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report",
	"respond_tool": "respond_report"}]`

// Runtime is one test's task runtime.
type Runtime struct {
	Cache   *toolcache.Cache
	Store   *taskstore.Store
	Service *taskservice.Service
	// Drivers are the plugin task drivers the config names (nil: none).
	Drivers *taskplugin.Set
}

// Options configure a test's task runtime; zero fields are defaults.
type Options struct {
	// Doc is written as the runtime's extensions_config.json (""
	// with ConfigPath "": no servers).
	Doc string
	// ConfigPath is an existing config file to read instead of Doc:
	// replicas of one host share it.
	ConfigPath string
	// Config is the task runtime's config (zero: FastConfig()).
	Config task.Config
	// DSN opens the store ("": SQLite in a temporary folder). Replicas
	// pass one Postgres schema (storetest.PostgresSchema); a test that
	// restarts the host passes the same SQLite path twice.
	DSN string
	// Logger receives the cache's and the service's logs (nil: discarded).
	Logger *slog.Logger
	// Tracer traces the tool calls and the task runtime (nil: off).
	Tracer *tracing.Tracer
	// Notifier delivers task events (nil: they stay pending).
	Notifier tasknotify.Notifier
	// Now is the service's clock (nil: time.Now).
	Now func() time.Time
}

// New writes doc as the extensions_config.json of a new tool cache and
// builds the store and the service over it. The service is not started
// (Start it when the test wants polling); it is stopped at the end.
func New(t testing.TB, doc string, cfg task.Config) *Runtime {
	t.Helper()
	return Open(t, Options{Doc: doc, Config: cfg})
}

// NewTraced is New with tr tracing the tool calls and the task runtime.
func NewTraced(t testing.TB, doc string, cfg task.Config, tr *tracing.Tracer) *Runtime {
	t.Helper()
	return Open(t, Options{Doc: doc, Config: cfg, Tracer: tr})
}

// Open builds the runtime opts describe: the tool cache over its config,
// the store, and the service with the ordinary driver, both spec tasks
// drivers and the plugin drivers the config names. The service is not
// started; every part is closed when the test ends.
func Open(t testing.TB, opts Options) *Runtime {
	t.Helper()
	cfg := opts.Config
	if cfg == (task.Config{}) {
		cfg = FastConfig()
	}
	path := opts.ConfigPath
	if path == "" {
		doc := opts.Doc
		if doc == "" {
			doc = `{"mcpServers": {}}`
		}
		path = filepath.Join(t.TempDir(), "extensions_config.json")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path, DataDir: t.TempDir(), SpecTasks: true, Tracer: opts.Tracer, Logger: opts.Logger})
	t.Cleanup(cache.Close)
	dsn := opts.DSN
	if dsn == "" {
		dsn = filepath.Join(t.TempDir(), "tasks.db")
	}
	store, err := taskstore.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var drivers task.Registry
	if err := drivers.Register(ordinary.Name, ordinary.New(taskservice.CacheCaller{Cache: cache})); err != nil {
		t.Fatal(err)
	}
	spec := spectasks.New(taskservice.SpecCaller{Cache: cache}, spectasks.Options{MaxPollInterval: cfg.MaxPollBackoff()})
	if err := drivers.Register(spectasks.Name, spec); err != nil {
		t.Fatal(err)
	}
	ext := spectasks.NewExtension(taskservice.SpecCaller{Cache: cache}, spectasks.Options{MaxPollInterval: cfg.MaxPollBackoff()})
	if err := drivers.Register(spectasks.ExtensionName, ext); err != nil {
		t.Fatal(err)
	}
	// Plugin drivers the config names are loaded as the host loads them.
	var plugged *taskplugin.Set
	// The file is read, not discovered: servers are contacted lazily.
	if ext, _, err := config.Load(path, envvar.OS); err == nil && len(ext.TaskDrivers()) > 0 {
		plugged, err = taskplugin.Load(context.Background(), ext.TaskDrivers(), taskservice.CacheCaller{Cache: cache}, &drivers,
			taskplugin.Options{CacheDir: compileCacheDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(plugged.Close)
	}
	svc := taskservice.New(taskservice.Options{Store: store, Drivers: &drivers, Config: cfg, Tracer: opts.Tracer, Logger: opts.Logger,
		Notifier: opts.Notifier, Now: opts.Now})
	t.Cleanup(svc.Stop)
	return &Runtime{Cache: cache, Store: store, Service: svc, Drivers: plugged}
}

// compiled is one Wasm compilation cache for every runtime of the test
// process: compiling a Go guest takes seconds, and tests load the same
// driver many times.
var compiled struct {
	once sync.Once
	dir  string
}

func compileCacheDir() string {
	compiled.once.Do(func() { compiled.dir, _ = os.MkdirTemp("", "antler-driver-cache-") }) // "" on error: memory
	return compiled.dir
}

// FastConfig is the runtime's default config, enabled, polling every second.
func FastConfig() task.Config {
	cfg := task.DefaultConfig()
	cfg.Enabled = true
	cfg.PollIntervalSeconds = 1
	return cfg
}

// Await waits until user's task id, as stored, satisfies cond and returns
// it; the test fails with what it waited for and the task's last status
// and poll count.
func Await(t testing.TB, store *taskstore.Store, id, user, what string, cond func(taskstore.Task) bool) taskstore.Task {
	t.Helper()
	var row taskstore.Task
	eventually.Check(t, what, func() (bool, string) {
		var err error
		if row, err = store.Get(context.Background(), id, user); err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		return cond(row), fmt.Sprintf("%s after %d polls", row.Status, row.PollAttemptCount)
	})
	return row
}
