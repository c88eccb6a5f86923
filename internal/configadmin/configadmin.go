// Package configadmin is the config admin API (DeerFlow's routers/mcp.py)
// without its routes: reading the servers masked, and the five edits (a
// bulk PUT, PATCH enabled, POST add, PUT one server, DELETE one). Every
// edit is one configfile.File.Update cycle, so the in-process lock and the
// sidecar flock are held across read → merge → launch policy → validate →
// atomic write → tool set rebuild, and two host processes never lose each
// other's update. The file is edited as raw, ordered JSON (document.go,
// encode.go): $VAR placeholders, unknown top-level keys, skills and key
// order survive; only mcpServers changes.
//
// Every failure is an *apierror.Error carrying DeerFlow's status and
// message; the HTTP layer only decodes the route and writes the answer.
package configadmin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/audit"
	"github.com/antler-mcp/antler/internal/catalog"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/configfile"
	"github.com/antler-mcp/antler/internal/launchpolicy"
	"github.com/antler-mcp/antler/internal/metrics"
)

// Tools is the tool set the file feeds: where it finds the file, and a
// rebuild after a write (the tool cache; only the sessions of servers
// whose launch changed are retired).
type Tools interface {
	ConfigPath() (string, error)
	Rebuild()
}

// Options configure an Admin. Nil fields are resolved per request.
type Options struct {
	// Tools is the tool set the file feeds (required).
	Tools Tools
	// File guards extensions_config.json (nil: the file Tools resolves, per
	// request; ./extensions_config.json when none exists).
	File *configfile.File
	// LaunchPolicy screens stdio servers arriving through the API (nil:
	// launchpolicy.FromEnv(os.LookupEnv), read per request).
	LaunchPolicy *launchpolicy.Policy
	// EnvAllowlist names the variables a request may reference as "$NAME"
	// where the stored server has no such reference (nil:
	// config.EnvAllowlistFromEnv(os.LookupEnv), read per request).
	EnvAllowlist *config.EnvAllowlist
	Logger       *slog.Logger
	// Audit, when set, records every edit written: who (WithActor), what
	// changed (field names, never values).
	Audit *audit.Logger
	// Metrics, when set, counts refused edits by reason.
	Metrics *metrics.Metrics
	// Catalog, when set, serves the tool catalog's pending changes and
	// approvals (PendingTools, ApproveTools); without it they answer 503.
	Catalog *catalog.Catalog
}

// Admin serves the config admin API over one configuration file.
type Admin struct {
	opts Options
	log  *slog.Logger
}

// New returns the config admin of opts.
func New(opts Options) *Admin {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Admin{opts: opts, log: log}
}

// Servers is every answer of the API: the servers as written in the file
// ($VAR placeholders kept, never resolved), with secrets masked.
type Servers struct {
	MCPServers *config.Object `json:"mcp_servers"`
}

// file returns the guard of the configuration file. Without one in the
// options it is the file the tool set resolves right now (the --config
// flag, $ANTLER_EXTENSIONS_CONFIG, $DEER_FLOW_EXTENSIONS_CONFIG_PATH,
// ./extensions_config.json, ./mcp_config.json); when none exists yet it is
// ./extensions_config.json in the working directory, which is where the
// cache looks first, so a file created through the API is the one served.
// Guards for one path share their locks, so a guard per request is fine.
func (a *Admin) file() (*configfile.File, error) {
	if a.opts.File != nil {
		return a.opts.File, nil
	}
	path, err := a.opts.Tools.ConfigPath()
	if err != nil {
		return nil, apierror.Wrap(err, http.StatusNotFound, "%s", err.Error())
	}
	if path == "" {
		dir, err := os.Getwd()
		if err != nil {
			err = fmt.Errorf("resolve extensions config path: %w", err)
			return nil, apierror.Wrap(err, http.StatusNotFound, "%s", err.Error())
		}
		path = filepath.Join(dir, config.DefaultNames[0])
	}
	return configfile.New(path, a.log).WithMaxSize(config.MaxFileSize), nil
}

// launchPolicy is the stdio launch policy; without one in the options it is
// read from the environment on every request, as DeerFlow reads its
// allowlist variable.
func (a *Admin) launchPolicy() *launchpolicy.Policy {
	if a.opts.LaunchPolicy != nil {
		return a.opts.LaunchPolicy
	}
	return launchpolicy.FromEnv(os.LookupEnv)
}

// envAllowlist is the set of variables a request may newly reference as
// "$NAME"; without one in the options it is read from the environment on
// every request, like the launch policy.
func (a *Admin) envAllowlist() config.EnvAllowlist {
	if a.opts.EnvAllowlist != nil {
		return *a.opts.EnvAllowlist
	}
	return config.EnvAllowlistFromEnv(os.LookupEnv)
}

// Get answers GET /api/mcp/config. It reads under both locks, so it never
// sees a writer's cycle half done.
func (a *Admin) Get(ctx context.Context) (Servers, error) {
	file, err := a.file()
	if err != nil {
		return Servers{}, err
	}
	const failure = "Failed to read MCP configuration"
	data, exists, err := file.Read(ctx)
	if err != nil {
		return Servers{}, answer(err, failure)
	}
	servers := config.NewObject()
	if exists {
		if _, err := loadDoc(data, true); err != nil {
			return Servers{}, answer(err, failure)
		}
		ext, err := config.Parse(data, config.Placeholders)
		if err != nil {
			return Servers{}, answer(invalidConfigError(err), failure)
		}
		servers = ext.MaskedServers()
	}
	return Servers{MCPServers: servers}, nil
}

// Replace answers PUT /api/mcp/config: the whole server set. Servers not in
// the body are removed; a server already stored is merged with it
// (config.MergeBulk: masked secrets restored, omitted routing, tools,
// user_auth, headers_from_context and extras kept). Every server in the
// body passes the full launch policy, enabled or not, unless it launches
// exactly as the stored one does and is not being enabled (see sameLaunch).
func (a *Admin) Replace(ctx context.Context, body io.Reader) (Servers, error) {
	incoming, err := readServers(body)
	if err != nil {
		return Servers{}, answer(err, badRequest)
	}
	return a.mutate(ctx, mutation{
		create:  true,
		failure: "Failed to update MCP configuration",
		apply: func(doc *rawDoc) ([]launchCheck, error) {
			next := config.NewObject()
			var checks []launchCheck
			for _, name := range incoming.Keys() {
				v, _ := incoming.Get(name)
				in := v.(*config.Object)
				stored, ok, err := doc.storedServer(name)
				if err != nil {
					return nil, err
				}
				var merged *config.Object
				if ok {
					merged, err = config.MergeServer(in, stored, config.MergeBulk)
				} else {
					merged, err = in, config.CheckNoMaskedSecrets(in)
				}
				if err != nil {
					return nil, err
				}
				next.Set(name, merged)
				checks = append(checks, checkFor(name, merged, true))
			}
			doc.replaceServers(next)
			return checks, nil
		},
	})
}

// SetEnabled answers PATCH /api/mcp/config: set "enabled" of one raw entry
// and nothing else. Enabling runs the full launch policy on that server;
// disabling never does.
func (a *Admin) SetEnabled(ctx context.Context, body io.Reader) (Servers, error) {
	fields, err := readObject(body, "server_name", "enabled")
	if err != nil {
		return Servers{}, answer(err, badRequest)
	}
	name, ok := rawGet(fields, "server_name").(string)
	if !ok || name == "" {
		return Servers{}, apierror.New(http.StatusBadRequest, "server_name: must be a non-empty string")
	}
	enabled, ok := rawGet(fields, "enabled").(bool)
	if !ok {
		return Servers{}, apierror.New(http.StatusBadRequest, "enabled: must be true or false")
	}
	notFound := fmt.Sprintf("MCP server '%s' not found", name)
	return a.mutate(ctx, mutation{
		missing: notFound,
		failure: "Failed to update MCP server state",
		apply: func(doc *rawDoc) ([]launchCheck, error) {
			stored, ok, err := doc.storedServer(name)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, apierror.New(http.StatusNotFound, "%s", notFound)
			}
			stored.Set("enabled", enabled)
			if enabled {
				return []launchCheck{{name: name, server: stored, full: true}}, nil
			}
			return nil, nil
		},
	})
}

// Add answers POST /api/mcp/config/servers: add servers, 409 when a name
// exists. A new server may hold no "***" placeholder. Enabled ones pass the
// full launch policy, disabled ones the command shape and environment.
func (a *Admin) Add(ctx context.Context, body io.Reader) (Servers, error) {
	incoming, err := readServers(body)
	if err != nil {
		return Servers{}, answer(err, badRequest)
	}
	return a.mutate(ctx, mutation{
		create:  true,
		failure: "Failed to add MCP servers",
		apply: func(doc *rawDoc) ([]launchCheck, error) {
			for _, name := range incoming.Keys() {
				if _, exists := doc.servers.Get(name); exists {
					return nil, apierror.New(http.StatusConflict, "MCP server '%s' already exists", name)
				}
			}
			var checks []launchCheck
			for _, name := range incoming.Keys() {
				v, _ := incoming.Get(name)
				in := v.(*config.Object)
				if err := config.CheckNoMaskedSecrets(in); err != nil {
					return nil, err
				}
				doc.servers.Set(name, in)
				checks = append(checks, checkFor(name, in, false))
			}
			return checks, nil
		},
	})
}

// ReplaceServer answers PUT /api/mcp/config/server: replace one existing
// server completely (config.MergeReplace: omitted fields reset, explicit
// "***" restores only the matching stored secret), in its place among its
// siblings.
func (a *Admin) ReplaceServer(ctx context.Context, body io.Reader) (Servers, error) {
	fields, err := readObject(body, "server_name", "server")
	if err != nil {
		return Servers{}, answer(err, badRequest)
	}
	name, ok := rawGet(fields, "server_name").(string)
	if !ok {
		return Servers{}, apierror.New(http.StatusBadRequest, "server_name: must be a string")
	}
	in, ok := rawGet(fields, "server").(*config.Object)
	if !ok {
		return Servers{}, apierror.New(http.StatusBadRequest, "server: must be a JSON object, got %s", config.JSONType(rawGet(fields, "server")))
	}
	return a.mutate(ctx, mutation{
		missing: "MCP configuration not found",
		failure: "Failed to update MCP server",
		apply: func(doc *rawDoc) ([]launchCheck, error) {
			stored, ok, err := doc.storedServer(name)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, apierror.New(http.StatusNotFound, "MCP server '%s' not found", name)
			}
			merged, err := config.MergeServer(in, stored, config.MergeReplace)
			if err != nil {
				return nil, err
			}
			doc.servers.Set(name, merged)
			return []launchCheck{checkFor(name, merged, false)}, nil
		},
	})
}

// Delete answers DELETE /api/mcp/config/servers/{name}.
func (a *Admin) Delete(ctx context.Context, name string) (Servers, error) {
	return a.mutate(ctx, mutation{
		missing: "MCP configuration not found",
		failure: "Failed to delete MCP server",
		apply: func(doc *rawDoc) ([]launchCheck, error) {
			if _, ok := doc.servers.Get(name); !ok {
				return nil, apierror.New(http.StatusNotFound, "MCP server '%s' not found", name)
			}
			doc.servers.Delete(name)
			return nil, nil
		},
	})
}
