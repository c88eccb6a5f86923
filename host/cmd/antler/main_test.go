package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/eventually"
	"github.com/antler-mcp/antler/internal/testmcp"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigValidate(t *testing.T) {
	good := writeFile(t, "good.json", `{"mcpServers": {"a": {"command": "x"}, "b": {"enabled": false, "type": "http"}}}`)
	bad := writeFile(t, "bad.json", `{"mcpServers": {"a": {"command": "x", "args": ["ok", 3, "$SECRET"], "routing": {"mode": "always"}},
		"b": {"type": "http", "headers": {"X-Key": "$SECRET", "x-key": "y"}}}}`)
	unstartable := writeFile(t, "unstartable.json", `{"mcpServers": {"a": {"type": "http"}, "b": {"command": "ok"}}}`)
	t.Setenv("SECRET", "hunter2-do-not-print")
	for _, tc := range []struct {
		name    string
		args    []string
		code    int
		want    []string
		wantOut string
	}{
		{"good", []string{"config", "validate", good}, 0, nil, "OK (2 servers, 1 enabled)"},
		{"every problem", []string{"config", "validate", bad}, 1, []string{
			"3 problem(s)",
			"mcpServers.a.args[1]: must be a string, got a number",
			`mcpServers.a.routing.mode: must be one of "off", "prefer", got "always"`,
			"mcpServers.b.headers: maps the same HTTP header under two spellings",
		}, ""},
		{"server that cannot start", []string{"config", "validate", unstartable}, 1, []string{"mcpServers.a.url: MCP server 'a' with http transport requires 'url' field"}, ""},
		{"missing file", []string{"config", "validate", filepath.Join(t.TempDir(), "nope.json")}, 1, []string{"not found"}, ""},
		{"not JSON", []string{"config", "validate", writeFile(t, "x.json", "{")}, 1, []string{"not valid JSON"}, ""},
		{"above 4 MiB", []string{"config", "validate", writeFile(t, "big.json", `{"mcpServers": {}}`+strings.Repeat(" ", 4<<20))}, 1,
			[]string{"extensions config file is too large: 4194322 bytes, above the limit of 4194304 bytes (4 MiB)"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, &out, &errb)
			}
			for _, w := range tc.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, &errb)
				}
			}
			if !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("stdout %q lacks %q", &out, tc.wantOut)
			}
			if strings.Contains(out.String()+errb.String(), "hunter2") {
				t.Error("a resolved $VAR value was printed")
			}
		})
	}
}

func TestToolsCommand(t *testing.T) {
	bin := testmcp.Build(t)
	cfg := writeFile(t, "c.json", fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}, "broken": {"command": "/nonexistent/x"}}}`, bin))
	var out, errb bytes.Buffer
	code := run([]string{"tools", "--config", cfg}, &out, &errb)
	if code != 1 {
		t.Errorf("exit %d, want 1 because a server failed", code)
	}
	if !regexp.MustCompile(`(?m)^demo_echo\s+demo\s+echo\s+`).MatchString(out.String()) {
		t.Errorf("tool table:\n%s", &out)
	}
	if !strings.Contains(errb.String(), "server broken failed") {
		t.Errorf("stderr:\n%s", &errb)
	}
}

func TestVersionAndUsage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "antler ") {
		t.Errorf("version: %d %q", code, &out)
	}
	if code := run([]string{"bogus"}, &out, &errb); code != 2 {
		t.Errorf("unknown command exit %d", code)
	}
}

func TestServeRefusesOpenNonLoopbackListen(t *testing.T) {
	var out, errb bytes.Buffer
	cfg := writeFile(t, "c.json", `{}`)
	code := run([]string{"serve", "--config", cfg, "--listen", "0.0.0.0:0", "--data", t.TempDir()}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "without API keys") {
		t.Errorf("exit %d, stderr %s", code, &errb)
	}
}

// TestServeShutsDownCleanly runs the real binary: a call in flight when
// SIGTERM arrives finishes, the process exits 0, and the stdio child is gone.
func TestServeShutsDownCleanly(t *testing.T) {
	root := testmcp.RepoRoot(t)
	antler := filepath.Join(t.TempDir(), "antler")
	if out, err := exec.Command("go", "build", "-o", antler, filepath.Join(root, "host/cmd/antler")).CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfg := writeFile(t, "c.json", fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}}}`, testmcp.Build(t)))
	cmd := exec.Command(antler, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data", t.TempDir())
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	addr := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := regexp.MustCompile(`serving \d+ tools on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		t.Fatalf("no listen line; stderr:\n%s", &stderr)
	}
	go io.Copy(io.Discard, stdout)

	// The pooled stdio session starts with the first call; whoami names its pid.
	resp, err := http.Post(addr+"/api/mcp/tools/demo_whoami/call", "application/json", strings.NewReader(`{"thread_id": "t1"}`))
	if err != nil {
		t.Fatal(err)
	}
	var who struct {
		StructuredContent struct{ PID int } `json:"structuredContent"`
	}
	json.NewDecoder(resp.Body).Decode(&who)
	resp.Body.Close()
	child := who.StructuredContent.PID
	if child == 0 {
		t.Fatal("whoami reported no pid")
	}

	type result struct {
		body string
		err  error
	}
	// The call is in flight once the stdio child has read it: its read
	// count (/proc/<pid>/io rchar) moves past what it was when idle.
	idle := readChars(t, child)
	inflight := make(chan result, 1)
	go func() {
		resp, err := http.Post(addr+"/api/mcp/tools/demo_sleep/call", "application/json", strings.NewReader(`{"arguments":{"ms":1000},"thread_id":"t1"}`))
		if err != nil {
			inflight <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		inflight <- result{body: string(b)}
	}()
	eventually.True(t, "the stdio child reading the sleep call", func() bool { return readChars(t, child) > idle })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r := <-inflight
	if r.err != nil || !strings.Contains(r.body, "slept 1000ms") {
		t.Errorf("in-flight call across SIGTERM: %q, %v", r.body, r.err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit: %v\n%s", err, &stderr)
	}
	// The child must be gone (signal 0 probes existence).
	eventually.True(t, fmt.Sprintf("stdio child %d to exit with the host", child), func() bool { return syscall.Kill(child, 0) != nil })
}

// TestQuickStartConfig runs the README's quick start configuration: the demo
// server is built from source with `go run` and its tools are listed.
func TestQuickStartConfig(t *testing.T) {
	t.Chdir(testmcp.RepoRoot(t))
	var out, errb bytes.Buffer
	if code := run([]string{"tools", "--config", "examples/quickstart/extensions_config.json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s", code, &errb)
	}
	for _, tool := range []string{"demo_echo", "demo_add", "demo_whoami"} {
		if !strings.Contains(out.String(), tool) {
			t.Errorf("quick start tools lack %s:\n%s", tool, &out)
		}
	}
	var v bytes.Buffer
	if code := run([]string{"config", "validate", "examples/quickstart/extensions_config.json"}, &v, &errb); code != 0 {
		t.Errorf("the quick start config does not validate: %s", &errb)
	}
}

func TestPluginCommands(t *testing.T) {
	root := testmcp.RepoRoot(t)
	wasmFile := filepath.Join(t.TempDir(), "tenant.wasm")
	var out, errb bytes.Buffer
	if code := run([]string{"plugin", "build", filepath.Join(root, "examples/plugins/tenantheader"), "-o", wasmFile}, &out, &errb); code != 0 {
		t.Fatalf("build: exit %d\n%s", code, &errb)
	}
	out.Reset()
	if code := run([]string{"plugin", "inspect", wasmFile}, &out, &errb); code != 0 {
		t.Fatalf("inspect: exit %d\n%s", code, &errb)
	}
	for _, want := range []string{fmt.Sprintf("abi:       %d.%d", abi.Major, abi.Minor), "features:  intercept\n", "antler_intercept", "wasi_snapshot_preview1.fd_write"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inspect output lacks %q:\n%s", want, &out)
		}
	}
	input := writeFile(t, "req.json", `{"server": "s", "tool": "s_echo", "secrets": {"tenant": "acme"}}`)
	out.Reset()
	if code := run([]string{"plugin", "test", wasmFile, "--input", input}, &out, &errb); code != 0 {
		t.Fatalf("test: exit %d\n%s", code, &errb)
	}
	if !strings.Contains(out.String(), `"X-Tenant-Token": "acme"`) || !strings.Contains(out.String(), `"action": "continue"`) {
		t.Errorf("plugin test output:\n%s", &out)
	}
	errb.Reset()
	if code := run([]string{"plugin", "inspect", input}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "not a valid WebAssembly module") {
		t.Errorf("inspect of a JSON file: exit %d, %s", code, &errb)
	}
}

// children lists the direct children of pid (from /proc).
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name in parentheses: state, ppid, ...
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
		fields := strings.Fields(rest)
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// TestNoOrphansWhenTheHostDies starts the real binary with a stdio server and
// a process plugin, kills the host with SIGKILL (no chance to clean up), and
// checks that the parent-death signal took both children down.
func TestNoOrphansWhenTheHostDies(t *testing.T) {
	root := testmcp.RepoRoot(t)
	dir := t.TempDir()
	antler := filepath.Join(dir, "antler")
	plugin := filepath.Join(dir, "tenantprocess")
	for out, pkg := range map[string]string{antler: "./host/cmd/antler", plugin: "./examples/plugins/tenantprocess"} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg, err, b)
		}
	}
	cfg := filepath.Join(dir, "extensions_config.json")
	doc := fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}}, "mcpInterceptors": [{"kind": "process", "path": "./tenantprocess", "grants": {"secrets": ["tenant"]}}]}`, testmcp.Build(t))
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(antler, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "data"))
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	addr := ""
	for addr == "" && sc.Scan() {
		addr = regexp.MustCompile(`serving \d+ tools on (http://\S+)`).FindString(sc.Text())
	}
	go io.Copy(io.Discard, stdout)
	// A call starts the pooled stdio session (the plugin process started
	// with the tool set).
	if _, base, ok := strings.Cut(addr, " on "); ok {
		resp, err := http.Post(base+"/api/mcp/tools/demo_echo/call", "application/json", strings.NewReader(`{"arguments":{"message":"x"},"secrets":{"tenant":"t"}}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	kids := children(cmd.Process.Pid)
	if len(kids) < 2 {
		t.Fatalf("children %v, want the stdio server and the plugin process\n%s", kids, &stderr)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for _, pid := range kids {
		eventually.True(t, fmt.Sprintf("child %d to exit with a SIGKILLed host", pid), func() bool { return syscall.Kill(pid, 0) != nil })
	}
}

// readChars is how many bytes process pid has read so far (rchar in
// /proc/<pid>/io): it moves when a stdio server reads a request.
func readChars(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatalf("read the io counters of %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("rchar of %d: %v", pid, err)
			}
			return n
		}
	}
	t.Fatalf("no rchar in /proc/%d/io", pid)
	return 0
}
