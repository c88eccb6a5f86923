// Command antler runs the Antler gateway and its operator tools.
//
//	antler serve [--config PATH] [--settings PATH] [--listen ADDR] [--data DIR] [--db URL]
//	antler config validate [PATH]
//	antler tools [--config PATH]
//	antler doctor [--config PATH] [--settings PATH] [--data DIR] [--db URL]
//	antler plugin build|inspect|test ...
//	antler version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/envvar"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `Antler: one safe, fast door to many MCP servers.

Usage:
  antler serve [--config PATH] [--settings PATH] [--listen ADDR] [--data DIR] [--db URL]
  antler config validate [PATH]
  antler tools [--config PATH]
  antler doctor [--config PATH] [--settings PATH] [--data DIR] [--db URL]
  antler plugin build <dir> | inspect <file.wasm> | test <file.wasm> --input req.json
  antler version
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return cmdServe(args[1:], stdout, stderr)
	case "config":
		if len(args) < 2 || args[1] != "validate" {
			fmt.Fprint(stderr, "usage: antler config validate [PATH]\n")
			return 2
		}
		return cmdValidate(args[2:], stdout, stderr)
	case "tools":
		return cmdTools(args[1:], stdout, stderr)
	case "doctor":
		return cmdDoctor(args[1:], stdout, stderr)
	case "plugin":
		return cmdPlugin(args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "antler", versionString())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "antler: unknown command %q\n\n%s", args[0], usage)
	return 2
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// cmdValidate prints every problem in a configuration file and exits non-zero
// if there is any.
func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("config validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	path, err := config.ResolvePath(fs.Arg(0), envvar.OS)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	if path == "" {
		fmt.Fprintln(stderr, "error: no extensions config found (looked for --config, $"+config.EnvPath+", $"+config.EnvDeerFlowPath+", ./extensions_config.json, ./mcp_config.json)")
		return 1
	}
	ext, _, err := config.Load(path, envvar.OS)
	if err != nil {
		var probs config.Problems
		if errors.As(err, &probs) {
			fmt.Fprintf(stderr, "%s: %d problem(s)\n", path, len(probs))
			for _, p := range probs {
				fmt.Fprintln(stderr, "  "+p.Error())
			}
		} else {
			fmt.Fprintln(stderr, "error:", err)
		}
		return 1
	}
	failed := 0
	for _, s := range ext.Enabled() {
		if s.Problem != nil {
			if failed == 0 {
				fmt.Fprintf(stderr, "%s: servers that cannot start:\n", path)
			}
			failed++
			fmt.Fprintln(stderr, "  "+s.Problem.Error())
		}
	}
	for _, w := range ext.Warnings {
		fmt.Fprintln(stderr, "warning: "+w)
	}
	if failed > 0 {
		return 1
	}
	fmt.Fprintf(stdout, "%s: OK (%d servers, %d enabled)\n", path, len(ext.Servers), len(ext.Enabled()))
	return 0
}

// cmdTools discovers the tools of a configuration and prints them.
func cmdTools(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tools", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "extensions_config.json path")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	progress, done := discoveryProgress(stderr)
	cache := toolcache.New(toolcache.Options{ConfigPath: *cfgPath, Logger: log, Version: versionString(), OnDiscovered: progress})
	defer cache.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	snap, err := cache.Load(ctx)
	done()
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSERVER\tORIGINAL\tDESCRIPTION")
	for _, t := range snap.Tools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Server, t.OriginalName, oneLine(t.Description, 60))
	}
	tw.Flush()
	code := 0
	for _, s := range snap.Servers {
		if s.State != toolcache.StateConnected {
			fmt.Fprintf(stderr, "server %s failed: %s\n", s.Name, s.Error)
			code = 1
		}
		for _, c := range s.Conflicts {
			fmt.Fprintf(stderr, "server %s: tool %s hidden: name %s already taken by server %s\n", s.Name, c.Tool, c.Name, c.KeptFrom)
		}
	}
	return code
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) > n {
		return string([]rune(s)[:n-1]) + "…"
	}
	return s
}

// parseDuration reads a settings duration with a fallback.
func parseDuration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("shutdown_timeout: %q is not a duration such as 10s", s)
	}
	return d, nil
}
