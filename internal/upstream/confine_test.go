package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/upstream"
)

// workspaceAttack is a set of files an agent writes into a thread workspace
// so that the next npx server started there runs its code. Each plants a
// canary write; canary is the file's absolute path.
type workspaceAttack struct {
	name  string
	files func(ws, canary, node string) []plantedFile
}

type plantedFile struct {
	path string // relative to the workspace
	body string
	exec bool // the agent had a tool that sets the executable bit
}

// workspaceAttacks are the ways npm reads a working directory: project
// .npmrc, a package.json whose bin shadows the package's, a
// node_modules/.bin file of the package's bin name, and a `node` in
// node_modules/.bin, which npm puts on PATH ahead of the real one.
var workspaceAttacks = []workspaceAttack{
	{".npmrc node-options", func(ws, canary, _ string) []plantedFile {
		return []plantedFile{
			{".npmrc", fmt.Sprintf("node-options=--require=%s\n", filepath.Join(ws, "x.js")), false},
			{"x.js", fmt.Sprintf("require('fs').appendFileSync(%q, 'PWNED\\n')\n", canary), false},
		}
	}},
	{"package.json bin shadowing", func(_, canary, _ string) []plantedFile {
		return []plantedFile{
			{"package.json", fmt.Sprintf(`{"name": "shadow", "version": "1.0.0", "bin": {%q: "x.js"}}`, testnpm.LauncherPackage), false},
			{"x.js", fmt.Sprintf("#!/usr/bin/env node\nrequire('fs').appendFileSync(%q, 'PWNED\\n')\n", canary), false},
		}
	}},
	{"node_modules/.bin shadowing", func(_, canary, _ string) []plantedFile {
		return []plantedFile{
			{"node_modules/.bin/" + testnpm.LauncherPackage, fmt.Sprintf("#!/bin/sh\necho PWNED >> %q\n", canary), true},
		}
	}},
	{"node_modules/.bin/node on PATH", func(_, canary, node string) []plantedFile {
		return []plantedFile{
			{"node_modules/.bin/node", fmt.Sprintf("#!/bin/sh\necho PWNED >> %q\nexec %q \"$@\"\n", canary, node), true},
		}
	}},
}

// plant writes attack's files into a fresh workspace and returns it with
// the canary's path.
func plant(t *testing.T, a workspaceAttack) (ws, canary string) {
	t.Helper()
	ws, canary = t.TempDir(), filepath.Join(t.TempDir(), "canary")
	plantInto(t, ws, canary, a)
	return ws, canary
}

// plantInto writes attack's files into ws.
func plantInto(t *testing.T, ws, canary string, a workspaceAttack) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range a.files(ws, canary, node) {
		p := filepath.Join(ws, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if f.exec {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(f.body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// dialNpxIn starts `npx --yes antler-test-fs .` (server-filesystem, from the
// test registry) in ws; confined says whether the host chose ws as the
// thread workspace (Options.Workspace) or runs the launcher there as is.
func dialNpxIn(t *testing.T, ws string, env map[string]string, confined bool) (*upstream.Conn, string, error) {
	t.Helper()
	return dialIn(t, ws, "npx", []string{"--yes", testnpm.LauncherPackage, "."}, env, confined)
}

// dialIn starts command with args in ws, like dialNpxIn.
func dialIn(t *testing.T, ws, command string, args []string, env map[string]string, confined bool) (*upstream.Conn, string, error) {
	t.Helper()
	logs := &syncBuf{}
	opts := upstream.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if confined {
		opts.Workspace = ws
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	conn, err := upstream.Dial(ctx, stdioServer(t, command, args, env, ws), opts)
	return conn, logs.String(), err
}

// TestNpxInWorkspaceReadsNoAgentFile performs each workspace attack for
// real, with both npms: in a workspace the host chose, the npx server
// (server-filesystem, installed by npx from a registry) starts, answers, and
// writes its relative output into the workspace, and the canary is absent.
// The control runs the same launch in the same kind of folder without the
// confinement, as an operator's cwd would: there the files do run.
func TestNpxInWorkspaceReadsNoAgentFile(t *testing.T) {
	for flavour, path := range npxFlavours(t) {
		t.Run(flavour, func(t *testing.T) {
			t.Setenv("PATH", path)
			_, env := testnpm.Registry(t)
			for _, a := range workspaceAttacks {
				t.Run(a.name, func(t *testing.T) {
					ws, canary := plant(t, a)
					conn, log, err := dialNpxIn(t, ws, env, true)
					if err != nil {
						t.Fatalf("confined npx did not start: %v\n%s", err, log)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					args, _ := json.Marshal(map[string]string{"path": "from-npx.txt", "content": "relative output"})
					raw, err := conn.CallTool(ctx, "write_file", args, nil)
					conn.Close()
					if err != nil {
						t.Fatalf("write_file: %v", err)
					}
					if b, err := os.ReadFile(filepath.Join(ws, "from-npx.txt")); err != nil || string(b) != "relative output" {
						t.Errorf("the server's relative output is not in the workspace: %q, %v (result %s)", b, err, raw)
					}
					if b, err := os.ReadFile(canary); err == nil {
						t.Fatalf("the agent's files ran in the confined launch: %q\n%s", b, log)
					}

					ws, canary = plant(t, a)
					conn, log, err = dialNpxIn(t, ws, env, false)
					if err == nil {
						conn.Close()
					}
					if b, err := os.ReadFile(canary); err != nil || len(b) == 0 {
						t.Errorf("control: the attack did not work without the confinement (canary %q, %v); the test proves nothing\n%s", b, err, log)
					}
				})
			}
		})
	}
}

// Every attack at once, against the npx and npm spellings that name the
// package in other places (npx's -p/--package, `--` before the package, npm
// exec): the confinement is the first argument and the env, so it holds
// whatever follows.
func TestNpxSpellingsInWorkspaceReadNoAgentFile(t *testing.T) {
	path := npxFlavours(t)["pinned npx"]
	t.Setenv("PATH", path)
	_, env := testnpm.Registry(t)
	pkg := testnpm.LauncherPackage
	for _, tc := range []struct {
		command string
		args    []string
	}{
		{"npx", []string{"-y", "--package", pkg, pkg, "."}},
		{"npx", []string{"--package=" + pkg, "--yes", "--", pkg, "."}},
		{"npx", []string{"--yes", "--", pkg, "."}},
		{"npm", []string{"exec", "--yes", "--", pkg, "."}},
	} {
		t.Run(tc.command+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			ws, canary := t.TempDir(), filepath.Join(t.TempDir(), "canary")
			for _, a := range workspaceAttacks {
				plantInto(t, ws, canary, a)
			}
			confinedListsTools(t, ws, canary, tc.command, tc.args, env)
		})
	}
}

// pyServer is a minimal real MCP stdio server in Python: it answers
// initialize, lists one tool, and on tools/call writes a file relative to
// its working directory.
const pyServer = `import json, sys
for line in sys.stdin:
    req = json.loads(line)
    if "id" not in req:
        continue
    m = req.get("method")
    if m == "initialize":
        res = {"protocolVersion": req["params"]["protocolVersion"], "capabilities": {"tools": {}},
               "serverInfo": {"name": "x", "version": "1"}}
    elif m == "tools/list":
        res = {"tools": [{"name": "write", "description": "writes from-python.txt", "inputSchema": {"type": "object"}}]}
    elif m == "tools/call":
        with open("from-python.txt", "w") as f:
            f.write("relative output")
        res = {"content": [{"type": "text", "text": "ok"}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32601, "message": "no"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": res}), flush=True)
`

// An operator's `python3 -m mcp_server_x` (the module on PYTHONPATH) with no
// cwd, after an agent wrote mcp_server_x.py into the workspace: the
// confined launch imports the operator's module (it answers and writes its
// relative output into the workspace) and not the agent's (no canary). The
// control, the same launch without the confinement, runs the agent's module.
func TestPythonModuleInWorkspaceNotImported(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	lib := t.TempDir()
	if err := os.WriteFile(filepath.Join(lib, "mcp_server_x.py"), []byte(pyServer), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PYTHONPATH": lib}
	args := []string{"-m", "mcp_server_x"}
	plantModule := func() (ws, canary string) {
		ws, canary = t.TempDir(), filepath.Join(t.TempDir(), "canary")
		body := fmt.Sprintf("open(%q, 'a').write('PWNED\\n')\n", canary)
		if err := os.WriteFile(filepath.Join(ws, "mcp_server_x.py"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return ws, canary
	}

	ws, canary := plantModule()
	conn, log, err := dialIn(t, ws, "python3", args, env, true)
	if b, err := os.ReadFile(canary); err == nil {
		t.Fatalf("the agent's module was imported: %q\n%s", b, log)
	}
	if err != nil {
		t.Fatalf("confined python3 -m did not start: %v\n%s", err, log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = conn.CallTool(ctx, "write", json.RawMessage(`{}`), nil)
	conn.Close()
	if err != nil {
		t.Fatalf("write: %v\n%s", err, log)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "from-python.txt")); err != nil || string(b) != "relative output" {
		t.Errorf("the server's relative output is not in the workspace: %q, %v", b, err)
	}
	if b, err := os.ReadFile(canary); err == nil {
		t.Fatalf("the agent's module was imported: %q\n%s", b, log)
	}

	ws, canary = plantModule()
	if conn, _, err := dialIn(t, ws, "python3", args, env, false); err == nil {
		conn.Close()
	}
	if b, err := os.ReadFile(canary); err != nil || len(b) == 0 {
		t.Errorf("control: the workspace module was not imported without the confinement (canary %q, %v); the test proves nothing", b, err)
	}
}

// A server whose command or script is a path relative to the host's
// working directory (where discovery runs it), with no cwd, after an agent
// wrote a same-named file into the workspace: the confined launch runs the
// host's file (the demo server answers; the script's relative output lands
// in the workspace) and not the agent's (no canary). The control runs the
// same launch without the confinement, where the agent's copy runs.
func TestRelativeServerFileInWorkspaceNotRun(t *testing.T) {
	demo := testmcp.Build(t)
	host := t.TempDir()
	sh := fmt.Sprintf("#!/bin/sh\npwd > started-in\nexec %q\n", demo)
	js := fmt.Sprintf("require('fs').writeFileSync('started-in', process.cwd())\n"+
		"const r = require('child_process').spawnSync(%q, {stdio: 'inherit'})\nprocess.exit(r.status ?? 1)\n", demo)
	for name, body := range map[string]string{"server": sh, "server.sh": sh, "server.js": js} {
		if err := os.WriteFile(filepath.Join(host, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(host) // the host's working directory; not parallel
	for _, tc := range []struct {
		command string
		args    []string
		planted string // the file the agent writes, same name as the host's
		agent   func(canary string) string
	}{
		{"./server", nil, "server", func(c string) string { return fmt.Sprintf("#!/bin/sh\necho PWNED >> %q\n", c) }},
		{"sh", []string{"server.sh"}, "server.sh", func(c string) string { return fmt.Sprintf("echo PWNED >> %q\n", c) }},
		{"node", []string{"server.js"}, "server.js", func(c string) string {
			return fmt.Sprintf("require('fs').appendFileSync(%q, 'PWNED\\n')\n", c)
		}},
	} {
		t.Run(tc.command, func(t *testing.T) {
			plantFile := func() (ws, canary string) {
				ws, canary = t.TempDir(), filepath.Join(t.TempDir(), "canary")
				if err := os.WriteFile(filepath.Join(ws, tc.planted), []byte(tc.agent(canary)), 0o755); err != nil {
					t.Fatal(err)
				}
				return ws, canary
			}
			ws, canary := plantFile()
			confinedListsTools(t, ws, canary, tc.command, tc.args, nil)
			if _, err := os.Stat(filepath.Join(ws, "started-in")); err != nil {
				t.Errorf("the server's relative output is not in the workspace: %v", err)
			}

			ws, canary = plantFile()
			if conn, _, err := dialIn(t, ws, tc.command, tc.args, nil, false); err == nil {
				conn.Close()
			}
			if b, err := os.ReadFile(canary); err != nil || len(b) == 0 {
				t.Errorf("control: the agent's file did not run without the confinement (canary %q, %v); the test proves nothing", b, err)
			}
		})
	}
}

// confinedListsTools starts command with args in the workspace ws, confined,
// and fails t unless the server lists tools and the agent's canary is absent.
func confinedListsTools(t *testing.T, ws, canary, command string, args []string, env map[string]string) {
	t.Helper()
	conn, log, err := dialIn(t, ws, command, args, env, true)
	if b, err := os.ReadFile(canary); err == nil {
		t.Fatalf("the agent's files ran: %q\n%s", b, log)
	}
	if err != nil {
		t.Fatalf("confined %s did not start: %v\n%s", command, err, log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := conn.ListTools(ctx)
	conn.Close()
	if err != nil || len(tools) == 0 {
		t.Fatalf("tools %d, %v\n%s", len(tools), err, log)
	}
	if b, err := os.ReadFile(canary); err == nil {
		t.Fatalf("the agent's files ran: %q\n%s", b, log)
	}
}

// A Python script on the host that imports a module beside it still starts
// when it runs in a workspace: Python puts the script's folder, not the
// working directory, on sys.path, so the confinement leaves PYTHONSAFEPATH
// unset for it (setting it would drop that folder and break the import).
func TestPythonScriptKeepsItsSiblingImports(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	lib := t.TempDir()
	for name, body := range map[string]string{"mcp_server_x.py": pyServer, "server.py": "import mcp_server_x\n"} {
		if err := os.WriteFile(filepath.Join(lib, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	conn, log, err := dialIn(t, t.TempDir(), "python3", []string{"-u", filepath.Join(lib, "server.py")}, nil, true)
	if err != nil {
		t.Fatalf("a host script with a sibling import did not start in a workspace: %v\n%s", err, log)
	}
	conn.Close()
}
