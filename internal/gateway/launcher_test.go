package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// An agent uses server-filesystem, pooled in its thread's workspace, to write
// launcher configuration there, then calls an npx server (server-filesystem
// again, installed by npx from a registry) in the same thread. The npx server
// starts, answers, writes its relative output into the workspace, and the
// agent's code never runs. The control runs the same npx line by hand in
// the same workspace, as the host did before: the agent's files do run.
func TestAgentFilesDoNotConfigureTheNextNpxServer(t *testing.T) {
	_, npmEnv := testnpm.Registry(t)
	fsIndex := testnpm.Filesystem(t)
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("npx is not on PATH")
	}
	for _, tc := range []struct {
		name  string
		files func(canary string) map[string]string // workspace path → content
	}{
		{".npmrc node-options", func(canary string) map[string]string {
			return map[string]string{
				".npmrc": "node-options=--require=./x.js\n",
				"x.js":   fmt.Sprintf("require('fs').appendFileSync(%q, 'PWNED\\n'); process.exit(0)\n", canary),
			}
		}},
		{"package.json bin shadowing", func(canary string) map[string]string {
			return map[string]string{
				"package.json": fmt.Sprintf(`{"name": "shadow", "version": "1.0.0", "bin": {%q: "x.js"}}`, testnpm.LauncherPackage),
				"x.js":         fmt.Sprintf("#!/usr/bin/env node\nrequire('fs').appendFileSync(%q, 'PWNED\\n')\n", canary),
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := t.TempDir()
			canary := filepath.Join(t.TempDir(), "canary")
			env, err := json.Marshal(npmEnv)
			if err != nil {
				t.Fatal(err)
			}
			doc := fmt.Sprintf(`{"mcpServers": {
				"fs": {"command": "node", "args": [%q, "."]},
				"npxfs": {"command": "npx", "args": ["--yes", %q, "."], "env": %s, "session_init_timeout": 120}
			}}`, fsIndex, testnpm.LauncherPackage, env)
			cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, doc), DataDir: data})
			t.Cleanup(cache.Close)
			srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler())
			t.Cleanup(srv.Close)
			a := &api{t: t, url: srv.URL}
			call := func(tool string, args map[string]string) map[string]any {
				t.Helper()
				body, _ := json.Marshal(map[string]any{"arguments": args, "thread_id": "t1"})
				code, res := a.do("POST", "/api/mcp/tools/"+tool+"/call", string(body))
				if code != 200 || res["isError"] == true {
					t.Fatalf("%s: %d %v", tool, code, res)
				}
				return res
			}

			for name, content := range tc.files(canary) {
				call("fs_write_file", map[string]string{"path": name, "content": content})
			}
			ws := filepath.Join(data, "users", "default", "threads", "t1", "user-data", "workspace")
			for name := range tc.files(canary) {
				if _, err := os.Stat(filepath.Join(ws, name)); err != nil {
					t.Fatalf("the agent's %s is not in the workspace: %v", name, err)
				}
			}

			res := call("npxfs_write_file", map[string]string{"path": "from-npx.txt", "content": "relative output"})
			if b, err := os.ReadFile(filepath.Join(ws, "from-npx.txt")); err != nil || string(b) != "relative output" {
				t.Errorf("the npx server's relative output is not in the workspace: %q, %v (%v)", b, err, res)
			}
			if got := text(res); !strings.Contains(got, "/mnt/user-data/workspace/from-npx.txt") {
				t.Errorf("result %q, want the virtual path", got)
			}
			if b, err := os.ReadFile(canary); err == nil {
				t.Fatalf("the agent's files ran when the host started the npx server: %q", b)
			}

			// Control: the same launch by hand in the same workspace.
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, "npx", "--yes", testnpm.LauncherPackage, ".")
			cmd.Dir = ws
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
			for k, v := range npmEnv {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, _ := cmd.CombinedOutput()
			if b, err := os.ReadFile(canary); err != nil || len(b) == 0 {
				t.Errorf("control: npx run by hand in the workspace did not run the agent's files (%v); the test proves nothing\n%s", err, out)
			}
		})
	}
}
