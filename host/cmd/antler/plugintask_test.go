package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

// TestPluginTaskRunsADriverAgainstALiveServer runs the jobs example driver's
// submit and status with `antler plugin task` against a real jobs server,
// as a Wasm module and as a process.
func TestPluginTaskRunsADriverAgainstALiveServer(t *testing.T) {
	root := testmcp.RepoRoot(t)
	src := filepath.Join(root, "examples", "plugins", "jobsdriver")
	bin := filepath.Join(t.TempDir(), "jobsdriver")
	if out, err := exec.Command("go", "build", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfg := writeFile(t, "c.json", fmt.Sprintf(`{"mcpServers": {"jobs": {"command": %q, "task_toolsets": [{"name": "jobs",
	  "submit_tool": "enqueue", "status_tool": "job_state", "cancel_tool": "abort_job"}]}}}`, testmcp.BuildJobs(t)))
	for _, c := range []struct{ kind, path string }{{"wasm", plugintest.BuildWasm(t, src)}, {"process", bin}} {
		t.Run(c.kind, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run([]string{"plugin", "task", c.path, "--kind", c.kind, "--config", cfg, "--server", "jobs",
				"--arguments", `{"payload": "hi", "steps": 2}`, "--interval", "1ms"}, &out, &errb)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, &out, &errb)
			}
			for _, want := range []string{`"op":"submit","remote_task_id":"1"`, `"status":"working"`, `"status":"completed"`, "processed: HI"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %s:\n%s", want, &out)
				}
			}
		})
	}
}
