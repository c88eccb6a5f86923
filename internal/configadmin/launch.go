package configadmin

import (
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/launchpolicy"
)

// launchCheck is one server the launch policy must pass before the write:
// full for the enabled ones (and everything in a bulk PUT), command shape
// and environment only for a disabled one. keepUnchanged (a bulk PUT) skips
// a server that launches exactly as the stored one does and is not being
// enabled: the operator's file (or an earlier screened call) put it there.
type launchCheck struct {
	name          string
	server        *config.Object
	full          bool
	keepUnchanged bool
}

func checkFor(name string, o *config.Object, bulk bool) launchCheck {
	return launchCheck{name: name, server: o, full: bulk || serverEnabled(o), keepUnchanged: bulk}
}

// screen runs the launch policy over checks: each server as the host will
// launch it (after), compared with what is stored (before, nil when the
// stored file is new or unreadable).
func screen(policy *launchpolicy.Policy, checks []launchCheck, before, after *config.Extensions) error {
	for _, chk := range checks {
		srv, ok := after.Server(chk.name)
		if !ok {
			continue
		}
		old, _ := before.Server(chk.name)
		if chk.keepUnchanged && old != nil && sameLaunch(old, srv) && (old.Enabled || !srv.Enabled) {
			continue
		}
		// The policy sees what the host will launch: $VAR references
		// resolved, the transport alias applied.
		l := launchOf(srv, old)
		var err error
		if chk.full {
			err = policy.Check(l)
		} else {
			err = policy.CheckShape(l)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// driversUnchanged refuses a write that adds or changes a plugin task
// driver (a task toolset's or a server's): a driver is code the host runs (a process or a Wasm module
// with call_tool), and like mcpInterceptors it is set in the file by the
// operator, never through the config API. Removing one is allowed.
func driversUnchanged(before, after *config.Extensions) error {
	// Every server, enabled or not: a disabled one is staged code.
	drivers := func(e *config.Extensions, visit func(field, key, driver string) error) error {
		if e == nil {
			return nil
		}
		for _, s := range e.Servers {
			if len(s.Driver) > 0 {
				if err := visit(fmt.Sprintf("mcpServers.%s.driver", s.Name), s.Name, string(s.Driver)); err != nil {
					return err
				}
			}
			for i, ts := range s.TaskToolsets {
				if len(ts.Driver) > 0 {
					field := fmt.Sprintf("mcpServers.%s.task_toolsets[%d].driver", s.Name, i)
					if err := visit(field, s.Name+"\x00"+ts.Name, string(ts.Driver)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	was := map[string]string{}
	_ = drivers(before, func(_, key, driver string) error { was[key] = driver; return nil })
	return drivers(after, func(field, key, driver string) error {
		if old, ok := was[key]; !ok || old != driver {
			return apierror.New(http.StatusBadRequest, "Invalid MCP configuration: %s: a task driver runs code on the host, so it is set in the configuration file, not through the config API (as mcpInterceptors are)", field)
		}
		return nil
	})
}

// launchOf describes a parsed server to the launch policy. Its working
// directory counts as the request's choice unless stored, the entry as the
// file holds it now (nil for a new one), is a stdio server with the same
// one.
func launchOf(srv, stored *config.Server) launchpolicy.Launch {
	l := launchpolicy.Launch{Server: srv.Name, Type: srv.Type, Command: srv.Command, Args: srv.Args, Cwd: srv.Cwd}
	if stored != nil && stored.IsStdio() && stored.Cwd == srv.Cwd {
		l.Cwd = ""
	}
	for _, p := range srv.Env {
		l.EnvNames = append(l.EnvNames, p.Key)
	}
	return l
}

// sameLaunch reports whether two parsed servers start the same process:
// transport, command, args, env (names and values) and working directory,
// compared as the loader reads them ($VAR references resolved, the
// transport defaulted and its alias applied, masked secrets already
// restored by the merge), so that a GET → PUT round trip is no change
// however the file spells the entry.
func sameLaunch(a, b *config.Server) bool {
	return a.Type == b.Type && a.Command == b.Command && slices.Equal(a.Args, b.Args) &&
		maps.Equal(a.Env.Map(), b.Env.Map()) && len(a.Env) == len(b.Env) && a.Cwd == b.Cwd
}
