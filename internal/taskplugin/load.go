package taskplugin

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/antler-mcp/antler/internal/audit"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/metrics"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
)

// Set is the plugin drivers the host loaded at startup. Close stops them.
type Set struct {
	host    *plugins.Host
	drivers []*Driver
}

// Options configure Load.
type Options struct {
	// CacheDir holds compiled Wasm across restarts ("" keeps it in memory).
	CacheDir string
	Logger   *slog.Logger
	// Audit, when set, records each driver loaded.
	Audit *audit.Logger
	// Metrics, when set, counts every driver call.
	Metrics *metrics.Metrics
}

// Load loads every plugin driver in specs and registers each under Name
// (server, toolset), a server's own under ServerDriverName. A driver that cannot be loaded fails the whole load:
// its tasks could not be polled.
func Load(ctx context.Context, specs []config.TaskDriverSpec, caller ordinary.ToolCaller, reg *task.Registry, opts Options) (*Set, error) {
	set := &Set{}
	if len(specs) == 0 {
		return set, nil
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	host, err := plugins.NewHost(opts.CacheDir, log)
	if err != nil {
		return nil, err
	}
	if opts.Metrics != nil {
		host.Observe(opts.Metrics.PluginCall)
	}
	set.host = host
	for _, spec := range specs {
		e, skip, _, err := plugins.ParseEntry(spec.Field, spec.JSON, spec.Dir)
		if err == nil && skip {
			err = fmt.Errorf("%s: must be \"wasm:<path>\", \"process:<path>\" or an object", spec.Field)
		}
		if err != nil {
			set.Close()
			return nil, err
		}
		p, err := host.LoadDriver(ctx, e)
		if err != nil {
			set.Close()
			return nil, fmt.Errorf("MCP task driver for %s: %w", spec.Field, err)
		}
		d := New(p, caller, log)
		set.drivers = append(set.drivers, d)
		if err := reg.Register(Name(spec.Server, spec.Toolset), d); err != nil {
			set.Close()
			return nil, err
		}
		log.Info("Loaded MCP task driver", "plugin", e.Name, "kind", e.Kind, "server", spec.Server, "toolset", spec.Toolset, "sha256", p.SHA256[:12])
		opts.Audit.PluginLoad(e.Name, "driver", e.Kind, e.Path, p.SHA256)
	}
	return set, nil
}

// Drivers are the loaded drivers, in spec order.
func (s *Set) Drivers() []*Driver { return s.drivers }

// Close stops every driver and the Wasm runtime.
func (s *Set) Close() {
	if s == nil {
		return
	}
	for _, d := range s.drivers {
		d.plugin.Close()
	}
	if s.host != nil {
		_ = s.host.Close(context.Background())
	}
	s.drivers, s.host = nil, nil
}
