package conformance

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/testmcp"
)

// jsonSchemaScenario is the pending scenario the fixture implements too.
const jsonSchemaScenario = "json-schema-2020-12"

// TestFixturePassesSuite runs the whole active suite, and the pending
// json-schema-2020-12 scenario, directly against the fixture server over
// streamable HTTP: every check must pass, and the suite must have run
// exactly the scenarios ActiveScenarios reports.
func TestFixturePassesSuite(t *testing.T) {
	url := StartFixtureHTTP(t)
	active := ActiveScenarios(t)

	res := RunServerSuite(t, url, Options{})
	if got, want := res.Names(), sorted(active); !slices.Equal(got, want) {
		t.Errorf("the active suite ran %d scenarios %v, ActiveScenarios lists %d: %v", len(got), got, len(want), want)
	}
	extra := RunServerSuite(t, url, Options{Scenarios: []string{jsonSchemaScenario}})
	for name, s := range extra.Scenarios {
		res.Scenarios[name] = s
	}

	for _, name := range res.Names() {
		s := res.Scenarios[name]
		if s.Failed > 0 || s.Passed == 0 {
			t.Errorf("scenario %s: %d of %d checks failed:\n  %s", name, s.Failed, s.Passed+s.Failed, strings.Join(s.Failures, "\n  "))
		}
	}
	passed, failed := res.Totals()
	t.Logf("%d scenarios: %d checks ok, %d not ok", len(res.Scenarios), passed, failed)
	if t.Failed() {
		t.Logf("suite output:\n%s%s", res.Output, extra.Output)
	}
}

// TestRunServerSuiteReportsFailures runs scenarios the demo server cannot
// pass (it has no test_image_content tool and no prompts), so that the
// failures must come through as failed checks with their messages.
func TestRunServerSuiteReportsFailures(t *testing.T) {
	url := testmcp.StartHTTP(t, "http") + "/mcp"
	scenarios := []string{"tools-call-image", "prompts-get-simple", "ping"}
	res := RunServerSuite(t, url, Options{Scenarios: scenarios})
	if got := res.Names(); !slices.Equal(got, sorted(scenarios)) {
		t.Fatalf("ran %v, want %v", got, sorted(scenarios))
	}
	for _, name := range []string{"tools-call-image", "prompts-get-simple"} {
		s := res.Scenarios[name]
		if s.Failed == 0 || len(s.Failures) != s.Failed || s.Failures[0] == "" {
			t.Errorf("scenario %s against the demo server: %+v, want failures with messages", name, s)
		}
	}
	if s := res.Scenarios["ping"]; s.Passed != 1 || s.Failed != 0 {
		t.Errorf("scenario ping against the demo server: %+v, want 1 passed check", s)
	}
	if got := res.FailedScenarios(); !slices.Equal(got, []string{"prompts-get-simple", "tools-call-image"}) {
		t.Errorf("FailedScenarios() = %v", got)
	}
}

// testSummaryShape is what CI takes for a test-runner summary.
var testSummaryShape = regexp.MustCompile(`\d+ passed, \d+ failed`)

func TestReword(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Total: 40 passed, 0 failed", "Total: 40 checks ok, 0 checks not ok"},
		{"✗ tools-call-image: 0 passed, 1 failed", "✗ tools-call-image: 0 checks ok, 1 checks not ok"},
		{"Passed: 4/4, 0 failed, 0 warnings", "checks ok: 4 of 4, not ok: 0, warnings: 0"},
		{"\x1b[1mTest\x1b[0m nothing to count", "Test nothing to count"},
	}
	for _, tt := range tests {
		got := Reword(tt.in)
		if got != tt.want {
			t.Errorf("Reword(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if testSummaryShape.MatchString(got) {
			t.Errorf("Reword(%q) = %q still has the test-summary shape", tt.in, got)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
