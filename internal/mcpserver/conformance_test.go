package mcpserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/conformance"
)

// expectedFailures lists the conformance scenarios allowed to fail through
// Antler, with the reason. TestConformanceThroughAntler fails on a listed
// scenario that passes as well as on an unlisted one that fails, so the
// list cannot go stale. It is empty: every active scenario passes.
var expectedFailures = map[string]string{}

// TestConformanceThroughAntler runs the official conformance suite's active
// server scenarios against /mcp of a real gateway whose only upstream is the
// conformance fixture over stdio, under its own names. Every scenario must
// pass, except those in expectedFailures.
func TestConformanceThroughAntler(t *testing.T) {
	// The scenario dns-rebinding-protection sends its valid request with
	// Origin http://localhost:<port>, which the gateway refuses unless it is
	// in http.allowed_origins (by default every Origin is refused: a
	// key-less host serves no browser); allow exactly that origin.
	base := startGateway(t, fixtureUpstream(t), true)
	url := strings.Replace(base, "127.0.0.1", "localhost", 1) + "/mcp"

	// dns-rebinding-protection expects a refusal of a foreign Host and
	// Origin; check the gateway's own answer first, so a failure there
	// names the edge rule rather than the scenario.
	for _, tc := range []struct{ name, host, origin string }{
		{"foreign Host", "evil.example.com", ""},
		{"foreign Origin", "", "http://evil.example.com"},
		{"foreign Host with its own Origin", "evil.example.com", "http://evil.example.com"},
	} {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.host != "" {
			req.Host = tc.host
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode > 499 {
			t.Errorf("%s: status %d, want a 4xx refusal", tc.name, resp.StatusCode)
		}
	}

	active := conformance.ActiveScenarios(t)
	res := conformance.RunServerSuite(t, url, conformance.Options{})
	for _, name := range active {
		s, ran := res.Scenarios[name]
		if !ran {
			t.Errorf("%s: did not run", name)
			continue
		}
		t.Logf("%s: checks ok %d, not ok %d", name, s.Passed, s.Failed)
		var problems []string
		if s.Failed > 0 {
			problems = s.Failures
		}
		t.Run(name, func(t *testing.T) { expectProblems(t, name, expectedFailures, problems) })
	}
	passed, failed := res.Totals()
	t.Logf("through Antler: %d scenarios, checks ok %d, not ok %d; scenarios with failures: %v", len(active), passed, failed, res.FailedScenarios())
	for name := range expectedFailures {
		if _, ran := res.Scenarios[name]; !ran {
			t.Errorf("expectedFailures names %s, which the suite did not run", name)
		}
	}
	if t.Failed() {
		t.Logf("suite output:\n%s", res.Output)
	}
}
