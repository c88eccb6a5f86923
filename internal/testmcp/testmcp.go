// Package testmcp gives tests anywhere in this repository a real MCP server to
// talk to: the demo server in examples/mcpserver/demo or the durable-task
// reports server in examples/mcpserver/reports, each built once per test
// binary and started as a child process.
package testmcp

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The import paths, relative to the repository root, of the servers that
// Build and BuildReports compile.
const (
	demoPackage    = "./examples/mcpserver/demo"
	reportsPackage = "./examples/mcpserver/reports"
	tasksPackage   = "./examples/mcpserver/tasks2026"
	jobsPackage    = "./examples/mcpserver/jobs"
)

// Timeouts for StartHTTP: how long the server may take to announce its
// address, and how long it may take to exit after SIGTERM before it is killed.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 5 * time.Second
)

// listeningPrefix starts the line the demo server prints on stdout once its
// HTTP listener is bound.
const listeningPrefix = "listening on "

// binary is one server build, cached for the life of the test process.
// Building is by far the slowest step, and every test would otherwise
// repeat it.
type binary struct {
	once sync.Once
	path string
	err  error
}

var demoBin, reportsBin, tasksBin, jobsBin binary

// Build compiles the demo MCP server and returns the path of the binary. The
// first call in a test process builds it into a fresh directory under the
// system temp dir; later calls, including concurrent ones, reuse that result.
// The directory outlives individual tests, so it is not removed.
func Build(t testing.TB) string {
	t.Helper()
	return demoBin.get(t, demoPackage)
}

// BuildReports compiles the reports server (submit/status/cancel task tools
// with failure knobs and call counters) like Build.
func BuildReports(t testing.TB) string {
	t.Helper()
	return reportsBin.get(t, reportsPackage)
}

// BuildTasks2026 compiles the 2026-07-28 tasks extension server
// (examples/mcpserver/tasks2026) like Build.
func BuildTasks2026(t testing.TB) string {
	t.Helper()
	return tasksBin.get(t, tasksPackage)
}

// BuildJobs compiles the jobs server (numeric job ids and states, the
// result fetched by a second tool; the plugin task driver example's
// upstream) like Build.
func BuildJobs(t testing.TB) string {
	t.Helper()
	return jobsBin.get(t, jobsPackage)
}

func (b *binary) get(t testing.TB, pkg string) string {
	t.Helper()
	b.once.Do(func() {
		b.path, b.err = build(pkg)
	})
	if b.err != nil {
		t.Fatalf("testmcp: %v", b.err)
	}
	return b.path
}

// build compiles pkg. It returns errors rather than failing a test, because
// it runs inside sync.Once and its result is shared by all.
func build(pkg string) (string, error) {
	root, err := findRepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "antler-testmcp-")
	if err != nil {
		return "", fmt.Errorf("create build dir: %w", err)
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	// go test puts its own toolchain first on PATH, so "go" is the toolchain
	// that is running the tests.
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// RepoRoot returns the repository root: the nearest directory at or above
// the working directory that contains go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := findRepoRoot()
	if err != nil {
		t.Fatalf("testmcp: %v", err)
	}
	return root
}

// findRepoRoot walks up from the working directory to the first directory
// holding a go.mod file.
func findRepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repo root: %w", err)
	}
	for dir := wd; ; {
		_, err := os.Stat(filepath.Join(dir, "go.mod"))
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("find repo root: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find repo root: no go.mod at or above %s", wd)
		}
		dir = parent
	}
}

// StartHTTP starts the demo server with -transport set to transport ("http"
// or "sse") followed by args, waits for it to announce its address and
// returns the base URL, such as http://127.0.0.1:41234. Callers append /mcp
// (streamable HTTP) or /sse (HTTP+SSE).
//
// The server is stopped when the test ends: it gets SIGTERM and, if it has
// not exited within five seconds, is killed. Its stderr is logged if the test
// failed.
func StartHTTP(t testing.TB, transport string, args ...string) string {
	t.Helper()
	return startHTTP(t, Build(t), "demo server", transport, args...)
}

// StartReportsHTTP starts the reports server over streamable HTTP like
// StartHTTP and returns its base URL (append /mcp). Several hosts can share
// it, and its report_stats tool counts the calls of all of them.
func StartReportsHTTP(t testing.TB, args ...string) string {
	t.Helper()
	return startHTTP(t, BuildReports(t), "reports server", "http", args...)
}

// StartBinaryHTTP starts bin, an MCP server built from one of the
// examples/mcpserver commands (they share the -transport flag and the
// "listening on" line), like StartHTTP, and returns its base URL. label names
// the server in messages.
func StartBinaryHTTP(t testing.TB, bin, label, transport string, args ...string) string {
	t.Helper()
	return startHTTP(t, bin, label, transport, args...)
}

func startHTTP(t testing.TB, bin, label, transport string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-transport", transport}, args...)...)
	announced := newFirstLine()
	var stderr bytes.Buffer
	cmd.Stdout = announced
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("testmcp: start %s: %v", label, err)
	}
	proc := Supervise(t, label+" (-transport "+transport+")", cmd, stderr.Bytes)
	exited := proc.Exited

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	var line string
	select {
	case line = <-announced.line:
	case <-exited:
		t.Fatalf("testmcp: %s exited before announcing its address: %v\nstderr:\n%s", label, proc.Err(), stderr.Bytes())
	case <-timer.C:
		t.Fatalf("testmcp: %s did not announce its address within %s", label, startTimeout)
	}

	base, ok := strings.CutPrefix(line, listeningPrefix)
	if !ok {
		t.Fatalf("testmcp: unexpected first line from %s: %q", label, line)
	}
	if u, err := url.Parse(base); err != nil || u.Scheme != "http" || u.Host == "" {
		t.Fatalf("testmcp: %s announced an invalid URL %q", label, base)
	}
	return base
}

// Proc is a started child process supervised for the length of a test.
type Proc struct {
	// Exited is closed when the process has exited.
	Exited <-chan struct{}
	err    error
}

// Err is the process's exit status; valid once Exited is closed.
func (p *Proc) Err() error { return p.err }

// Supervise owns cmd.Wait for a started process and, when the test ends, sends
// SIGTERM, kills it if it has not exited within five seconds, and logs
// output() if the test failed. label names the process in messages.
func Supervise(t testing.TB, label string, cmd *exec.Cmd, output func() []byte) *Proc {
	exited := make(chan struct{})
	p := &Proc{Exited: exited}
	// Wait returns only after the output copiers finish, so output is
	// complete once exited is closed.
	go func() {
		p.err = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stop(t, label, cmd, exited)
		if out := output(); t.Failed() && len(out) > 0 {
			t.Logf("%s output:\n%s", label, out)
		}
	})
	return p
}

// stop asks the process to shut down gracefully and kills it if it does not
// exit within stopTimeout. It returns once the process has exited.
func stop(t testing.TB, label string, cmd *exec.Cmd, exited <-chan struct{}) {
	select {
	case <-exited:
		return // already gone, for instance after the exit tool
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = cmd.Process.Kill()
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		t.Logf("testmcp: %s ignored SIGTERM for %s; killing it", label, stopTimeout)
		_ = cmd.Process.Kill()
		<-exited
	}
}

// firstLine is an io.Writer that delivers the first line written to it on
// the line channel and discards everything after. Only the os/exec copier
// goroutine writes to it.
type firstLine struct {
	line chan string
	buf  []byte
	done bool
}

func newFirstLine() *firstLine {
	return &firstLine{line: make(chan string, 1)}
}

// Write implements io.Writer.
func (w *firstLine) Write(p []byte) (int, error) {
	if w.done {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if i := bytes.IndexByte(w.buf, '\n'); i >= 0 {
		w.line <- strings.TrimRight(string(w.buf[:i]), "\r")
		w.buf, w.done = nil, true
	}
	return len(p), nil
}
