package upstream_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/upstream"
)

// offlineNpm are env entries that keep npx from reaching any registry: a
// registry nothing listens on, only cached responses, and an empty cache of
// the test's own, so no package can be downloaded or found in a cache.
func offlineNpm(t *testing.T) map[string]string {
	return map[string]string{
		"npm_config_registry":        "http://127.0.0.1:9/",
		"npm_config_offline":         "true",
		"npm_config_fetch_retries":   "0",
		"npm_config_cache":           t.TempDir(),
		"npm_config_update_notifier": "false",
	}
}

// stdioServer builds a stdio server entry.
func stdioServer(t *testing.T, command string, args []string, env map[string]string, cwd string) *config.Server {
	t.Helper()
	return &config.Server{
		Name:    "npx-test",
		Type:    config.TransportStdio,
		Command: command,
		Args:    args,
		Env:     pairs(env),
		Cwd:     cwd,
	}
}

func pairs(m map[string]string) config.Pairs {
	var out config.Pairs
	for k, v := range m {
		out = append(out, config.Pair{Key: k, Value: v})
	}
	return out
}

// npxFlavours are the npx binaries the tests run: the one on PATH, and the
// npm pinned in testdata/npm (10.9.4, the version the launch policy's
// tables come from), put first on PATH. Tests skip without node, npx or
// the pinned packages, and fail instead under CI=true.
func npxFlavours(t *testing.T) map[string]string {
	t.Helper()
	testnpm.Everything(t) // node and testdata/npm are there
	if _, err := exec.LookPath("npx"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("npx is not on PATH")
		}
		t.Skip("npx is not on PATH")
	}
	pinned := filepath.Join(testmcp.RepoRoot(t), "testdata", "npm", "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(pinned, "npx")); err != nil {
		t.Fatalf("pinned npx: %v", err)
	}
	return map[string]string{
		"PATH npx":   os.Getenv("PATH"),
		"pinned npx": pinned + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
}

// dialLogged dials srv with a debug logger and returns the log (the
// child's stderr, masked) once the child is gone.
func dialLogged(t *testing.T, srv *config.Server) (*upstream.Conn, string, error) {
	t.Helper()
	logs := &syncBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	conn, err := upstream.Dial(ctx, srv, upstream.Options{Logger: log})
	return conn, logs.String(), err
}

// TestNpxDoesNotRunSystemPrograms starts `npx --yes <program> …` for
// programs in node's bin folder (/usr/bin for a Node installed under /usr):
// npx used to run them as "globally installed bins". With the null prefix
// the global bin folder is empty: npx asks the registry for a package of
// that name (here an unreachable one, offline, with an empty cache) and
// fails, and the canary, which writes a marker file, never runs.
func TestNpxDoesNotRunSystemPrograms(t *testing.T) {
	for flavour, path := range npxFlavours(t) {
		t.Run(flavour, func(t *testing.T) {
			t.Setenv("PATH", path)
			for _, tc := range []struct {
				program string
				args    func(marker string) []string
			}{
				{"bash", func(m string) []string { return []string{"-c", "echo PWNED > " + m} }},
				{"sh", func(m string) []string { return []string{"-c", "echo PWNED > " + m} }},
				{"node", func(m string) []string {
					return []string{"-e", fmt.Sprintf("require('fs').writeFileSync(%q, 'PWNED')", m)}
				}},
			} {
				t.Run(tc.program, func(t *testing.T) {
					marker := filepath.Join(t.TempDir(), "marker")
					args := append([]string{"--yes", tc.program}, tc.args(marker)...)
					conn, log, err := dialLogged(t, stdioServer(t, "npx", args, offlineNpm(t), t.TempDir()))
					if err == nil {
						conn.Close()
						t.Fatal("npx started an MCP server")
					}
					if b, err := os.ReadFile(marker); err == nil {
						t.Fatalf("npx ran %s: the marker says %q\n%s", tc.program, b, log)
					}
					// What npx did instead: look the name up as a package
					// ("request to <registry>/<name> failed", with the
					// registry masked as a configured env value).
					if !strings.Contains(log, "ENOTCACHED") || !strings.Contains(log, tc.program+" failed: cache mode is 'only-if-cached'") {
						t.Errorf("npx did not try to fetch a package named %q:\n%s", tc.program, log)
					}
				})
			}

			// Control: with the prefix npm has by default (node's), which the
			// operator may still choose in env, the same line does run the
			// program. Its canary only writes the marker.
			node, err := exec.LookPath("node")
			if err != nil {
				t.Fatal(err)
			}
			real, err := filepath.EvalSymlinks(node)
			if err != nil {
				t.Fatal(err)
			}
			nodePrefix := filepath.Dir(filepath.Dir(real))
			if _, err := os.Stat(filepath.Join(nodePrefix, "bin", "bash")); err != nil {
				t.Logf("no bash in %s/bin: control skipped", nodePrefix)
				return
			}
			marker := filepath.Join(t.TempDir(), "marker")
			env := offlineNpm(t)
			env["NPM_CONFIG_PREFIX"] = nodePrefix
			conn, log, err := dialLogged(t, stdioServer(t, "npx", []string{"--yes", "bash", "-c", "echo PWNED > " + marker}, env, t.TempDir()))
			if err == nil {
				conn.Close()
			}
			if b, err := os.ReadFile(marker); err != nil || string(b) != "PWNED\n" {
				t.Errorf("with the operator's NPM_CONFIG_PREFIX=%s, npx did not run %s/bin/bash (marker %q, %v):\n%s", nodePrefix, nodePrefix, b, err, log)
			}
		})
	}
}

// TestNpxStillRunsLocalPackages starts server-everything, installed in
// testdata/npm/node_modules, through npx with that folder as cwd, by package
// name and by bin name, without installing anything: npx still finds local
// packages and their bins.
func TestNpxStillRunsLocalPackages(t *testing.T) {
	cwd := filepath.Join(testmcp.RepoRoot(t), "testdata", "npm")
	for flavour, path := range npxFlavours(t) {
		t.Run(flavour, func(t *testing.T) {
			t.Setenv("PATH", path)
			for _, pkg := range []string{"@modelcontextprotocol/server-everything", "mcp-server-everything"} {
				t.Run(pkg, func(t *testing.T) {
					conn, log, err := dialLogged(t, stdioServer(t, "npx", []string{"--no-install", pkg}, offlineNpm(t), cwd))
					if err != nil {
						t.Fatalf("npx %s: %v\n%s", pkg, err, log)
					}
					defer conn.Close()
					if strings.Contains(log, "level=WARN") {
						t.Errorf("npx %s: the launch warned:\n%s", pkg, log)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					tools, err := conn.ListTools(ctx)
					if err != nil || len(tools) == 0 {
						t.Fatalf("npx %s: tools %d, %v", pkg, len(tools), err)
					}
				})
			}
		})
	}
}
