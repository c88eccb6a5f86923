// Package testtask builds a real durable task runtime for tests: the tool
// cache over a config file, a SQLite task store and the task service with
// the ordinary driver, both spec tasks drivers (2025-11-25 and the
// 2026-07-28 extension) and the plugin drivers the config names, every part
// closed when the test ends.
package testtask

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/envvar"
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

// New writes doc as the extensions_config.json of a new tool cache and
// builds the store and the service over it. The service is not started
// (Start it when the test wants polling); it is stopped at the end.
func New(t testing.TB, doc string, cfg task.Config) *Runtime {
	t.Helper()
	return NewTraced(t, doc, cfg, nil)
}

// NewTraced is New with tr tracing the tool calls and the task runtime.
func NewTraced(t testing.TB, doc string, cfg task.Config, tr *tracing.Tracer) *Runtime {
	t.Helper()
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path, DataDir: t.TempDir(), SpecTasks: true, Tracer: tr})
	t.Cleanup(cache.Close)
	store, err := taskstore.Open(context.Background(), filepath.Join(t.TempDir(), "tasks.db"))
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
	svc := taskservice.New(taskservice.Options{Store: store, Drivers: &drivers, Config: cfg, Tracer: tr})
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
