package toolcache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// The adversarial review's attack through the pooled path: an operator's
// stdio server with no cwd names a Python module (`python3 -m`) or a script
// relative to the host's folder; an agent writes a same-named file into its
// thread workspace; the next pooled call on that thread starts the server
// there. The call is answered by the operator's server (the demo server,
// exec'd by the host's module or script) and the agent's file never runs.
// The control gives the same config the planted folder as its cwd, where the
// launch is not confined: the agent's file runs.
func TestPooledServerRunsNoAgentFile(t *testing.T) {
	demo := testmcp.Build(t)
	host, lib := t.TempDir(), t.TempDir()
	files := map[string]string{
		filepath.Join(host, "server.sh"):      fmt.Sprintf("exec %q\n", demo),
		filepath.Join(lib, "mcp_server_x.py"): fmt.Sprintf("import os\nos.execv(%q, [%q])\n", demo, demo),
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(host) // discovery's folder; not parallel
	for _, tc := range []struct {
		name, server, planted string
	}{
		{"python -m", fmt.Sprintf(`{"command": "python3", "args": ["-m", "mcp_server_x"], "env": {"PYTHONPATH": %q}`, lib), "mcp_server_x.py"},
		{"relative script", `{"command": "sh", "args": ["server.sh"]`, "server.sh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			canary := filepath.Join(t.TempDir(), "canary")
			agent := map[string]string{
				"mcp_server_x.py": fmt.Sprintf("open(%q, 'a').write('PWNED\\n')\n", canary),
				"server.sh":       fmt.Sprintf("echo PWNED >> %q\n", canary),
			}[tc.planted]
			b, data := pooledBundle(t, doc(`"x": `+tc.server+`}`))
			ws := filepath.Join(data, "users", "alice", "threads", "t1", "user-data", "workspace")
			if err := os.MkdirAll(ws, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, tc.planted), []byte(agent), 0o644); err != nil {
				t.Fatal(err)
			}
			s := b.snap()
			_, callErr := s.Invoke(context.Background(), callReq("x_whoami"))
			if got, err := os.ReadFile(canary); err == nil {
				t.Fatalf("the agent's %s ran in the pooled launch: %q (call: %v)", tc.planted, got, callErr)
			}
			if id := whoamiAs(t, s, "x_whoami", "alice", "t1"); id.Cwd != "/mnt/user-data/workspace" {
				t.Errorf("cwd %q, want the thread workspace", id.Cwd)
			}

			control, _ := pooledBundle(t, doc(`"x": `+tc.server+fmt.Sprintf(`, "cwd": %q}`, ws)))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if s, err := control.cache.ToolSet(ctx); err == nil {
				_, _ = s.Invoke(ctx, callReq("x_whoami"))
			}
			if got, err := os.ReadFile(canary); err != nil || len(got) == 0 {
				t.Errorf("control: the agent's %s did not run with the workspace as the operator's cwd (canary %q, %v); the test proves nothing", tc.planted, got, err)
			}
		})
	}
}

// callReq is a call of tool by alice on thread t1 with no arguments.
func callReq(tool string) dispatch.Request {
	return dispatch.Request{Name: tool, Arguments: json.RawMessage(`{}`), UserID: "alice", ThreadID: "t1"}
}
