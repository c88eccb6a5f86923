package dashboard_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/plugins/plugintest"
)

// chromium finds the browser: $ANTLER_CHROMIUM or chromium on PATH. Outside
// CI a missing browser or playwright-core skips; under CI=true it fails.
func chromium(t *testing.T, root string) string {
	t.Helper()
	missing := func(what string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s (CI installs both: apt-get install -y chromium; npm ci --prefix testdata/npm)", what)
		}
		t.Skipf("%s: install Debian's chromium (or set ANTLER_CHROMIUM) and run npm ci --prefix testdata/npm", what)
	}
	if _, err := os.Stat(filepath.Join(root, "testdata", "npm", "node_modules", "playwright-core", "package.json")); err != nil {
		missing("playwright-core is not installed in testdata/npm")
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not on PATH")
	}
	if p := os.Getenv("ANTLER_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		missing("no chromium on PATH")
	}
	return p
}

// serve starts `antler serve` from bin and returns its base URL once it
// serves its tools; it is killed when the test ends.
func serve(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	serving := regexp.MustCompile(`serving \d+ tools on (http://\S+)`)
	for sc.Scan() {
		if m := serving.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return m[1]
		}
	}
	_ = cmd.Wait()
	t.Fatalf("antler serve did not start:\n%s", &errb)
	return ""
}

func status(t *testing.T, method, url, key string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestDashboardInChromium runs a real `antler serve` with the quick start's
// servers (demo, and reports with its task toolset) and two keys, and
// drives the dashboard in headless Chromium (testdata/npm/dashboard/e2e.mjs):
// the admin sees the servers and tools, runs demo_echo from the form,
// submits a report and watches it complete on the live event stream,
// answers a report's question and cancels another from the task view, and
// edits the config (demo's enabled flag by PATCH, a disabled server's
// description by PUT of one server, its masked secret sent back masked); the agent sees only its own tasks and no config; no
// CSP violation happens. The config file on disk shows both edits.
// Screenshots land in $ANTLER_ARTIFACTS (or a temp folder), printed.
func TestDashboardInChromium(t *testing.T) {
	root := testmcp.RepoRoot(t)
	browser := chromium(t, root)
	dir := t.TempDir()
	antler := filepath.Join(dir, "antler")
	if out, err := exec.Command("go", "build", "-C", root, "-o", antler, "./host/cmd/antler").CombinedOutput(); err != nil {
		t.Fatalf("build antler: %v\n%s", err, out)
	}
	const spareSecret = "spare-secret-canary-42"
	cfg := filepath.Join(dir, "extensions_config.json")
	doc := fmt.Sprintf(`{"mcpServers": {
		"demo": {"enabled": true, "type": "stdio", "command": %q, "description": "Antler's demo MCP server"},
		"reports": {"enabled": true, "type": "stdio", "command": %q, "description": "A long-running reports server",
			"task_toolsets": [{"name": "report-generation", "submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report", "respond_tool": "respond_report"}]},
		"spare": {"enabled": false, "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
			"env": {"API_TOKEN": %q}, "description": "not started"}},
		"mcpInterceptors": ["wasm:%s"]}`,
		testmcp.Build(t), testmcp.BuildReports(t), spareSecret,
		// A real plugin on every call, so the plugins page shows its row.
		plugintest.BuildWasm(t, filepath.Join(root, "examples", "plugins", "redactor")))
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	const adminKey, agentKey = "ak-dashboard-admin-0123456789", "ak-dashboard-agent-0123456789"
	// metrics: true lets the plugins page read real series.
	yml := "metrics: true\nmcp_tasks:\n  enabled: true\n  poll_interval_seconds: 1\nauth:\n  keys:\n" +
		"    - key: $ANTLER_E2E_ADMIN_KEY\n      user: root\n      role: admin\n" +
		"    - key: $ANTLER_E2E_AGENT_KEY\n      user: bob\n      role: agent\n"
	settingsFile := filepath.Join(dir, "antler.yaml")
	if err := os.WriteFile(settingsFile, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	base := serve(t, antler, []string{"ANTLER_E2E_ADMIN_KEY=" + adminKey, "ANTLER_E2E_AGENT_KEY=" + agentKey},
		"--config", cfg, "--settings", settingsFile, "--data", filepath.Join(dir, "data"))

	// The catalog and metrics pages come with routes this build may not
	// have; without them the pages must show "not available".
	catalog := status(t, "GET", base+"/api/mcp/catalog", adminKey) == http.StatusOK
	metrics := status(t, "GET", base+"/metrics", adminKey) == http.StatusOK
	flag := func(on bool) string {
		if on {
			return "1"
		}
		return "0"
	}
	if catalog {
		// A rewritten tool: the demo server now describes echo with a note,
		// which the catalog records as a pending change to approve.
		edited := strings.Replace(doc, fmt.Sprintf(`"command": %q,`, testmcp.Build(t)),
			fmt.Sprintf(`"command": %q, "args": ["-echo-note", "rewritten"],`, testmcp.Build(t)), 1)
		if err := os.WriteFile(cfg, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	artifacts := os.Getenv("ANTLER_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	}
	artifacts = filepath.Join(artifacts, "dashboard")
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	// The attacker's page: another origin on the same host.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<!doctype html><title>another site</title>")
	}))
	t.Cleanup(evil.Close)
	cmd := exec.Command("node", filepath.Join(root, "testdata", "npm", "dashboard", "e2e.mjs"))
	cmd.Dir = filepath.Join(root, "testdata", "npm")
	cmd.Env = append(os.Environ(), "ANTLER_BASE="+base, "ANTLER_ADMIN_KEY="+adminKey, "ANTLER_AGENT_KEY="+agentKey,
		"ANTLER_CHROMIUM="+browser, "ANTLER_SPARE_SECRET="+spareSecret, "ANTLER_EVIL_URL="+evil.URL, "ANTLER_ARTIFACTS="+artifacts, "ANTLER_CATALOG="+flag(catalog), "ANTLER_METRICS="+flag(metrics))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("dashboard screenshots: %s", artifacts)
	if err != nil {
		t.Fatalf("browser run: %v\n%s\n%s", err, &stdout, &stderr)
	}
	var out struct {
		OK          bool     `json:"ok"`
		AdminTask   string   `json:"admin_task"`
		AgentTask   string   `json:"agent_task"`
		Screenshots []string `json:"screenshots"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); err != nil || !out.OK || len(out.Screenshots) < 7 {
		t.Fatalf("browser run answered %q (%v)", &stdout, err)
	}
	for _, s := range out.Screenshots {
		if fi, err := os.Stat(s); err != nil || fi.Size() == 0 {
			t.Errorf("screenshot %s: %v", s, err)
		}
	}

	// The edits reached the file.
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Servers map[string]struct {
			Enabled     *bool             `json:"enabled"`
			Description string            `json:"description"`
			Env         map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	if d := file.Servers["demo"]; d.Enabled == nil || *d.Enabled {
		t.Errorf("demo's enabled flag in the file after the browser unticked it: %s", raw)
	}
	if r := file.Servers["reports"]; r.Enabled == nil || !*r.Enabled {
		t.Errorf("reports changed (the other origin's PATCH went through?): %s", raw)
	}
	// The masked secret came back as "***" and kept the stored value.
	if sp := file.Servers["spare"]; sp.Description != "edited in the browser" || sp.Env["API_TOKEN"] != spareSecret {
		t.Errorf("spare after the browser's edit: %s", raw)
	}

	t.Run("catalog approve", func(t *testing.T) {
		if !catalog {
			t.Fatal("GET /api/mcp/catalog is not available: the catalog page had nothing to approve")
		}
	})
	t.Run("plugin metrics", func(t *testing.T) {
		if !metrics {
			t.Fatal("GET /metrics is not available: the plugins page read no series")
		}
	})
}
