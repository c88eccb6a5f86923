package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/eventually"
)

// TestMetricsAndAuditAfterRealTraffic runs antler serve with metrics and the
// audit log on, drives real traffic through it (a stdio call, a durable
// report that completes and is delivered to a webhook, a broken config
// edit), and scrapes /metrics on metrics_listen (the main listener then has
// none): the series move, and no label holds a thread id, an argument or a
// secret. The audit log holds the stdio launches and the report's life.
func TestMetricsAndAuditAfterRealTraffic(t *testing.T) {
	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	reports := buildInto(t, dir, "./examples/mcpserver/reports", "reports")
	demo := buildInto(t, dir, "./examples/mcpserver/demo", "demo")
	cfg := filepath.Join(dir, "extensions_config.json")
	doc := fmt.Sprintf(`{"mcpServers": {"demo": {"command": %q}, "reports": {"command": %q, "task_toolsets": [{"name": "report-generation",
		"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report"}]}}}`, demo, reports)
	write(t, cfg, doc)
	hook := newHookReceiver(t)
	auditFile := filepath.Join(dir, "audit.jsonl")
	set := write(t, filepath.Join(dir, "antler.yaml"), fmt.Sprintf("audit_log: "+auditFile+"\nmetrics: true\nmetrics_listen: 127.0.0.1:0\nmcp_tasks:\n  enabled: true\n  poll_interval_seconds: 1\n"+
		"  notifications:\n    webhook_url: %s/hook\n    webhook_secret: %s\n", hook.srv.URL, hookSecret))
	host := startServe(t, antler, "--config", cfg, "--settings", set, "--data", filepath.Join(dir, "data"))
	// The kernel picks the metrics port (a port picked free and released
	// could be another process's by the time the host listens), and the
	// host logs where it listens.
	var metricsAddr string
	eventually.Check(t, "the host logs the metrics address", func() (bool, string) {
		m := regexp.MustCompile(`msg="metrics listening" addr=http://(\S+)/metrics`).FindStringSubmatch(host.errb.String())
		if m != nil {
			metricsAddr = m[1]
		}
		return m != nil, host.errb.String()
	})

	if code, res := host.do("POST", "/api/mcp/tools/demo_echo/call", `{"arguments": {"message": "secret-argument-canary"}, "thread_id": "thread-canary"}`); code != 200 || res["isError"] == true {
		t.Fatalf("echo: %d %v", code, res)
	}
	if code, res := host.do("POST", "/api/mcp/tools/demo_fail/call", `{"arguments": {"message": "no"}, "thread_id": "thread-canary"}`); code != 200 || res["isError"] != true {
		t.Fatalf("fail: %d %v", code, res)
	}
	code, res := host.do("POST", "/api/mcp/tools/reports_submit_report/call", `{"arguments": {"topic": "q3", "delay_ms": 500}, "thread_id": "thread-canary"}`)
	sc, _ := res["structuredContent"].(map[string]any)
	id, _ := sc["task_id"].(string)
	if code != 200 || id == "" {
		t.Fatalf("submit: %d %v", code, res)
	}
	host.awaitDetail("thread-canary", id, "completed and delivered", completedAndDelivered)
	if code, res := host.do("PATCH", "/api/mcp/config", `{"server_name": "reports", "enabled": false}`); code != 200 {
		t.Fatalf("PATCH: %d %v", code, res)
	}
	host.do("GET", "/api/mcp/tools", "") // the edit's rebuild: a reload applied
	if code, _ := host.do("POST", "/api/mcp/config/servers", `{"mcp_servers": {"bad": {"type": "stdio", "routing": {"mode": "always"}}}}`); code != 400 {
		t.Fatalf("an invalid POST: %d, want 400", code)
	}
	write(t, cfg, `{"mcpServers": {"demo": {"command": 42}}}`) // an edit that does not load
	host.do("GET", "/api/mcp/tools", "")

	body := get(t, "http://"+metricsAddr+"/metrics")
	if code, _ := host.do("GET", "/metrics", ""); code != http.StatusNotFound {
		t.Errorf("with metrics_listen set, the main listener's /metrics answered %d, want 404", code)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^antler_discovery_duration_seconds_count\{server="demo"\} 2$`),
		regexp.MustCompile(`(?m)^antler_tool_calls_total\{door="rest",outcome="ok",server="demo"\} 1$`),
		regexp.MustCompile(`(?m)^antler_tool_calls_total\{door="rest",outcome="tool_error",server="demo"\} 1$`),
		regexp.MustCompile(`(?m)^antler_tool_calls_total\{door="task",outcome="ok",server="reports"\} [2-9]`),
		regexp.MustCompile(`(?m)^antler_tool_call_duration_seconds_count\{door="rest",server="demo"\} 2$`),
		regexp.MustCompile(`(?m)^antler_discovery_duration_seconds_count\{server="reports"\} 1$`),
		regexp.MustCompile(`(?m)^antler_stdio_session_events_total\{event="started",server="demo"\} 1$`),
		regexp.MustCompile(`(?m)^antler_stdio_sessions\{server="demo"\} 1$`),
		regexp.MustCompile(`(?m)^antler_task_poll_duration_seconds_count\{driver="ordinary-tools",outcome="ok"\} [1-9]`),
		regexp.MustCompile(`(?m)^antler_tasks\{status="completed"\} 1$`),
		regexp.MustCompile(`(?m)^antler_tasks_tracking_degraded 0$`),
		regexp.MustCompile(`(?m)^antler_task_answers_pending 0$`),
		regexp.MustCompile(`(?m)^antler_task_notification_deliveries_total\{outcome="delivered"\} [1-9]`),
		regexp.MustCompile(`(?m)^antler_config_reloads_total\{outcome="applied"\} 1$`),
		regexp.MustCompile(`(?m)^antler_config_reloads_total\{outcome="rejected"\} 1$`),
		regexp.MustCompile(`(?m)^antler_config_edits_rejected_total\{reason="invalid"\} 1$`),
	} {
		if !want.MatchString(body) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	for _, never := range []string{"thread-canary", "secret-argument-canary", hookSecret, id} {
		if strings.Contains(body, never) {
			t.Errorf("the metrics show %q", never)
		}
	}

	var records []map[string]any
	data, err := os.ReadFile(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		records = append(records, r)
	}
	has := func(want map[string]any) bool {
		for _, r := range records {
			ok := true
			for k, v := range want {
				ok = ok && r[k] == v
			}
			if ok {
				return true
			}
		}
		return false
	}
	for _, want := range []map[string]any{
		{"event": "stdio.launch", "server": "demo", "command": demo, "user": "default", "thread": "thread-canary"},
		{"event": "stdio.launch", "server": "reports", "command": reports, "user": "default", "thread": "thread-canary"},
		{"event": "task", "change": "created", "task_id": id, "user": "default", "thread": "thread-canary", "server": "reports", "to": "submitted"},
		{"event": "task", "change": "status", "task_id": id, "to": "completed"},
		{"event": "config.change", "actor": "default", "action": "PATCH /api/mcp/config", "config_path": cfg},
	} {
		if !has(want) {
			t.Errorf("audit log lacks %v:\n%s", want, data)
		}
	}
	if !strings.Contains(string(data), `"changes":[{"server":"reports","change":"updated","fields":["enabled"]}]`) {
		t.Errorf("the config change does not name its field:\n%s", data)
	}
	for _, never := range []string{"secret-argument-canary", hookSecret} {
		if strings.Contains(string(data), never) {
			t.Errorf("the audit log shows %q", never)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}
