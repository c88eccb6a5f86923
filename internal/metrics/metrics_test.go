package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/antler-mcp/antler/internal/metrics"
)

// TestSeriesFollowNamingConventions moves every series once and lints the
// registry with Prometheus's own linter (units in names, _total counters,
// help text).
func TestSeriesFollowNamingConventions(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	touchAll(m)
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "antler_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

// TestScrape serves the handler and reads the series a scraper sees.
func TestScrape(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	touchAll(m)
	m.SetTaskStats(func(context.Context) (metrics.TaskStats, error) {
		return metrics.TaskStats{ByStatus: map[string]int{"working": 3, "completed": 7}, Degraded: 1, AnswersPending: 2}, nil
	})
	body := scrape(t, m)
	for _, want := range []string{
		`antler_tool_calls_total{door="rest",outcome="ok",server="demo"} 2`,
		`antler_tool_calls_total{door="mcp",outcome="denied",server="demo"} 1`,
		`antler_tool_call_duration_seconds_count{door="rest",server="demo"} 2`,
		`antler_plugin_calls_total{carrier="wasm",outcome="failed",plugin="mcpInterceptors[0]",role="interceptor"} 1`,
		`antler_stdio_sessions{server="fs"} 1`,
		`antler_stdio_session_events_total{event="started",server="fs"} 4`,
		`antler_stdio_session_events_total{event="crashed",server="fs"} 1`,
		`antler_oauth_token_fetches_total{outcome="failed",server="api"} 1`,
		`antler_discovery_failures_total{server="broken"} 1`,
		`antler_task_poll_duration_seconds_count{driver="ordinary",outcome="ok"} 1`,
		`antler_task_notification_deliveries_total{outcome="dead_letter"} 1`,
		`antler_config_reloads_total{outcome="applied"} 1`,
		`antler_config_edits_rejected_total{reason="launch_policy"} 1`,
		`antler_tasks{status="working"} 3`,
		`antler_tasks_tracking_degraded 1`,
		`antler_task_answers_pending 2`,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
}

// TestScrapeSurvivesAFailingStore leaves the task gauges out of a scrape
// whose store query fails, and serves everything else.
func TestScrapeSurvivesAFailingStore(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.ToolCall("demo", "rest", metrics.OutcomeOK, time.Millisecond)
	m.SetTaskStats(func(context.Context) (metrics.TaskStats, error) {
		return metrics.TaskStats{}, errors.New("database is down")
	})
	body := scrape(t, m)
	if !strings.Contains(body, `antler_tool_calls_total{door="rest",outcome="ok",server="demo"} 1`) {
		t.Errorf("tool calls missing when the store fails:\n%s", body)
	}
	if strings.Contains(body, "antler_tasks{") {
		t.Errorf("task gauges served from a failed query:\n%s", body)
	}
}

// TestNilMetricsDoNothing: a package given no metrics must not panic.
func TestNilMetricsDoNothing(t *testing.T) {
	t.Parallel()
	var m *metrics.Metrics
	touchAll(m)
	m.SetTaskStats(nil)
	if m.Registry() != nil {
		t.Error("nil metrics have a registry")
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 404 {
		t.Errorf("nil metrics handler answered %d", rec.Code)
	}
}

func touchAll(m *metrics.Metrics) {
	m.ToolCall("demo", "rest", metrics.OutcomeOK, 2*time.Millisecond)
	m.ToolCall("demo", "rest", metrics.OutcomeOK, 3*time.Millisecond)
	m.ToolCall("demo", "mcp", metrics.OutcomeDenied, time.Microsecond)
	m.PluginCall("mcpInterceptors[0]", metrics.RoleInterceptor, metrics.CarrierWasm, errors.New("trap"), 10*time.Microsecond)
	m.PluginCall("mcpServers.jobs.task_toolsets[0].driver", metrics.RoleDriver, metrics.CarrierProcess, nil, time.Millisecond)
	m.Session("fs", metrics.SessionStarted)
	m.Session("fs", metrics.SessionStarted)
	m.Session("fs", metrics.SessionCrashed)
	m.Session("fs", metrics.SessionEvicted)
	m.Session("fs", metrics.SessionStarted)
	m.Session("fs", metrics.SessionClosed)
	m.Session("fs", metrics.SessionStarted)
	m.OAuthFetch("api", errors.New("401"))
	m.OAuthFetch("api", nil)
	m.Discovery("demo", nil, 40*time.Millisecond)
	m.Discovery("broken", errors.New("exec: not found"), time.Millisecond)
	m.TaskPoll("ordinary", nil, time.Millisecond)
	m.Delivery(metrics.DeliveryDelivered)
	m.Delivery(metrics.DeliveryDeadLetter)
	m.ConfigReload(metrics.ReloadApplied)
	m.ConfigEditRejected("launch_policy")
	m.CatalogDrift("demo")
}

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %d\n%s", resp.StatusCode, b)
	}
	return string(b)
}
