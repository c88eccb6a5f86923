package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/envvar"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// databaseTimeout bounds the database check: a database that does not
// answer is reported, not waited on. Plugin loads are bounded per call by
// their entries' timeouts, as when serving (compiling a large module on a
// slow machine can take longer than any fixed bound on the whole check).
const databaseTimeout = 15 * time.Second

// checkup collects the findings of antler doctor, one line each, with what
// to do about a failure.
type checkup struct {
	w        io.Writer
	failures int
}

func (c *checkup) ok(what, detail string) {
	fmt.Fprintf(c.w, "ok    %-9s %s\n", what, detail)
}

func (c *checkup) warn(what, detail string) {
	fmt.Fprintf(c.w, "warn  %-9s %s\n", what, detail)
}

func (c *checkup) fail(what, detail, fix string) {
	c.failures++
	fmt.Fprintf(c.w, "FAIL  %-9s %s\n", what, detail)
	if fix != "" {
		fmt.Fprintf(c.w, "      %-9s fix: %s\n", "", fix)
	}
}

// cmdDoctor checks what a first run of antler serve needs — settings and
// configuration valid, stdio launchers on PATH, the data folder writable,
// the database reachable, plugin files loadable — without starting any
// server or changing anything, and says what to fix.
func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	hf := registerHostFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx := context.Background()
	c := &checkup{w: stdout}

	st, sp, err := hf.settings()
	if err != nil {
		c.fail("settings", err.Error(), "correct the settings file (antler.yaml); every key is documented in README")
	} else {
		c.ok("settings", orDefaults(sp))
		if err := gateway.CheckListen(st.Listen, principal.New(st.Auth.Keys)); err != nil {
			c.fail("listen", err.Error(), "listen on 127.0.0.1, or add auth.keys to the settings")
		} else {
			c.ok("listen", st.Listen)
		}
	}

	ext := checkConfig(c, *hf.config)
	if ext != nil {
		checkLaunchers(c, ext)
	}
	if err == nil {
		checkDataDir(c, st.DataDir)
		if st.MCPTasks.Enabled {
			dsn := st.Database
			if dsn == "" {
				dsn = filepath.Join(st.DataDir, "antler.db")
			}
			checkDatabase(ctx, c, dsn)
		} else {
			c.ok("database", "not used (mcp_tasks is off)")
		}
	}
	if ext != nil {
		checkPlugins(ctx, c, ext)
	}

	switch c.failures {
	case 0:
		fmt.Fprintln(stdout, "\nReady: antler serve should start.")
		return 0
	case 1:
		fmt.Fprintln(stdout, "\n1 problem found.")
	default:
		fmt.Fprintf(stdout, "\n%d problems found.\n", c.failures)
	}
	return 1
}

func orDefaults(path string) string {
	if path == "" {
		return "no settings file: the defaults"
	}
	return path
}

// checkConfig reports the configuration's problems and returns it when it
// could be read.
func checkConfig(c *checkup, explicit string) *config.Extensions {
	path, err := config.ResolvePath(explicit, envvar.OS)
	if err != nil {
		c.fail("config", err.Error(), "pass --config with an existing file")
		return nil
	}
	if path == "" {
		c.fail("config", "no extensions config found (looked for --config, $"+config.EnvPath+", $"+config.EnvDeerFlowPath+", ./extensions_config.json, ./mcp_config.json)",
			"create extensions_config.json (README, Quick start)")
		return nil
	}
	ext, _, err := config.Load(path, envvar.OS)
	if err != nil {
		var probs config.Problems
		if !errors.As(err, &probs) {
			c.fail("config", err.Error(), "")
			return nil
		}
		for _, p := range probs {
			c.fail("config", p.Error(), "")
		}
		return nil
	}
	c.ok("config", fmt.Sprintf("%s: %d servers, %d enabled", path, len(ext.Servers), len(ext.Enabled())))
	for _, w := range ext.Warnings {
		c.warn("config", w)
	}
	for _, s := range ext.Enabled() {
		if s.Problem != nil {
			c.fail("server", s.Problem.Error(), "")
		}
	}
	return ext
}

// checkLaunchers finds each enabled stdio server's command the way the
// host will start it: a bare name on the host's PATH, a path relative to
// the server's cwd.
func checkLaunchers(c *checkup, ext *config.Extensions) {
	for _, s := range ext.Enabled() {
		if !s.IsStdio() || s.Problem != nil || s.Command == "" {
			continue
		}
		what := fmt.Sprintf("server %s: command %q", s.Name, s.Command)
		field := "mcpServers." + s.Name + ".command"
		if !strings.ContainsRune(s.Command, '/') {
			p, err := exec.LookPath(s.Command)
			if err != nil {
				c.fail("launcher", what+" is not on PATH", launcherFix(s.Command, field))
				continue
			}
			c.ok("launcher", what+" is "+p)
			continue
		}
		p := s.Command
		if !filepath.IsAbs(p) && s.Cwd != "" {
			p = filepath.Join(s.Cwd, p)
		}
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			c.fail("launcher", what+": "+pathProblem(err), "build or install it, or correct "+field)
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			c.fail("launcher", what+" is not an executable file", "chmod +x it, or correct "+field)
		default:
			c.ok("launcher", what)
		}
	}
}

func launcherFix(cmd, field string) string {
	switch cmd {
	case "npx", "node", "npm":
		return "install Node.js 20 or newer (it ships npm and npx), or set " + field + " to an absolute path"
	case "uvx", "uv":
		return "install uv (it ships uvx), or set " + field + " to an absolute path"
	}
	return "install it, put its folder on PATH, or set " + field + " to an absolute path"
}

func pathProblem(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// checkDataDir checks that the data folder can be written, creating
// nothing: an existing folder gets a temporary file, a missing one is
// checked at its nearest existing parent, which serve would create it in.
func checkDataDir(c *checkup, dir string) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		c.fail("data", err.Error(), "")
		return
	}
	at, missing := abs, false
	for {
		fi, err := os.Stat(at)
		if err == nil {
			if !fi.IsDir() {
				c.fail("data", fmt.Sprintf("%s: %s is not a folder", abs, at), "set data_dir (or --data) to a folder path")
				return
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			c.fail("data", fmt.Sprintf("%s: %s", abs, pathProblem(err)), "set data_dir (or --data) to a folder Antler can write")
			return
		}
		missing = true
		parent := filepath.Dir(at)
		if parent == at {
			break
		}
		at = parent
	}
	f, err := os.CreateTemp(at, ".antler-doctor-*")
	if err != nil {
		c.fail("data", fmt.Sprintf("%s: cannot write in %s: %s", abs, at, pathProblem(err)), "make it writable by this user, or set data_dir (or --data) elsewhere")
		return
	}
	f.Close()
	os.Remove(f.Name())
	if missing {
		c.ok("data", abs+" will be created")
		return
	}
	c.ok("data", abs+" is writable")
}

// checkDatabase reads the task store's state without migrating it.
func checkDatabase(ctx context.Context, c *checkup, dsn string) {
	ctx, cancel := context.WithTimeout(ctx, databaseTimeout)
	defer cancel()
	shown := redactDSN(dsn)
	h, err := taskstore.Check(ctx, dsn)
	switch {
	case errors.Is(err, taskstore.ErrNewerSchema):
		c.fail("database", fmt.Sprintf("%s: %v", shown, err), "run the newer antler build that migrated it, or point database at another store")
	case errors.Is(err, taskstore.ErrDamaged):
		c.fail("database", err.Error(), "")
	case err != nil:
		c.fail("database", fmt.Sprintf("%s: %s", shown, redactDSN(err.Error())), "start the database or correct database (or --db) in the settings")
	case !h.Exists:
		c.ok("database", fmt.Sprintf("%s %s will be created", h.Engine, shown))
	case h.Version < h.Target:
		c.ok("database", fmt.Sprintf("%s %s: schema %d, migrated to %d at the next start", h.Engine, shown, h.Version, h.Target))
	default:
		c.ok("database", fmt.Sprintf("%s %s: schema %d, current", h.Engine, shown, h.Version))
	}
}

// checkPlugins loads every interceptor and task driver the configuration
// names, the way serve will, and closes it again. Nothing is cached: the
// compilation cache is a temporary folder.
func checkPlugins(ctx context.Context, c *checkup, ext *config.Extensions) {
	type named struct {
		field  string
		json   []byte
		dir    string
		driver bool
	}
	var all []named
	for _, s := range ext.InterceptorSpecs {
		all = append(all, named{s.Path, s.JSON, ext.Dir, false})
	}
	for _, s := range ext.TaskDrivers() {
		all = append(all, named{s.Field, s.JSON, s.Dir, true})
	}
	if len(all) == 0 {
		return
	}
	cache, err := os.MkdirTemp("", "antler-doctor-")
	if err != nil {
		c.fail("plugin", err.Error(), "")
		return
	}
	defer os.RemoveAll(cache)
	host, err := plugins.NewHost(cache, slog.New(slog.DiscardHandler))
	if err != nil {
		c.fail("plugin", err.Error(), "")
		return
	}
	defer host.Close(context.Background())
	for _, n := range all {
		e, skip, warning, err := plugins.ParseEntry(n.field, n.json, n.dir)
		switch {
		case err != nil:
			c.fail("plugin", err.Error(), "")
			continue
		case skip:
			c.warn("plugin", warning)
			continue
		}
		what := fmt.Sprintf("%s (%s %s)", n.field, e.Kind, e.Path)
		var closer func()
		if n.driver {
			var d *plugins.Driver
			if d, err = host.LoadDriver(ctx, e); err == nil {
				closer = d.Close
			}
		} else {
			var p *plugins.Plugin
			if p, err = host.Load(ctx, e); err == nil {
				closer = p.Close
			}
		}
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, n.field) {
				msg = what + ": " + msg
			}
			c.fail("plugin", msg, pluginFix(e))
			continue
		}
		closer()
		c.ok("plugin", what+" loads")
	}
}

func pluginFix(e plugins.Entry) string {
	if e.Kind == plugins.KindWasm {
		return "rebuild it (antler plugin build <dir>) or correct the path"
	}
	return "rebuild it (go build) or correct the path"
}
