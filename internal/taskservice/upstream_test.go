package taskservice_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/taskstore/storetest"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// engines are the two stores: each returns a fresh, empty DSN.
var engines = []struct {
	name string
	dsn  func(t testing.TB) string
}{
	{"sqlite", func(t testing.TB) string { return filepath.Join(t.TempDir(), "tasks.db") }},
	{"postgres", func(t testing.TB) string { return storetest.PostgresSchema(t, storetest.PostgresURL(t)) }},
}

// httpReports starts one real reports server on streamable HTTP (so every
// user's calls reach the same process and its counters) and writes a
// config naming it.
func httpReports(t testing.TB) string {
	t.Helper()
	url := testmcp.StartReportsHTTP(t) + "/mcp"
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	doc := fmt.Sprintf(`{"mcpServers": {"reports": {"type": "http", "url": %q, "task_toolsets": [{"name": "report-generation",
		"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report"}]}}}`, url)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func submitAs(ctx context.Context, svc *taskservice.Service, user, args string) (taskstore.Task, error) {
	return svc.Submit(ctx, ordinary.Name, task.SubmitRequest{
		UserID: user, ThreadID: "t1", ServerName: "reports", TaskName: "report",
		Arguments:  json.RawMessage(args),
		DriverData: ordinary.DriverData("submit_report", "get_report_status", "cancel_report"),
	})
}

// reportStats is what the reports server counted.
type reportStats struct {
	Submits        int `json:"submits"`
	StatusCalls    int `json:"status_calls"`
	CancelCalls    int `json:"cancel_calls"`
	InFlightStatus int `json:"in_flight_status"`
	HungCancels    int `json:"hung_cancels"`
	PerTask        map[string]struct {
		StatusCalls         int            `json:"status_calls"`
		MaxConcurrentStatus int            `json:"max_concurrent_status"`
		AnswerCalls         map[string]int `json:"answer_calls"`
		AnswerApplied       string         `json:"answer_applied"`
	} `json:"per_task"`
}

// serverStats asks the reports server, as user (which picks the pooled
// process on stdio), what it counted.
func serverStats(t testing.TB, cache *toolcache.Cache, user string) reportStats {
	t.Helper()
	snap, err := cache.ToolSet(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := snap.CallServerTool(context.Background(), "reports", "report_stats", dispatch.Request{Arguments: json.RawMessage(`{}`), UserID: user, ThreadID: "t1"}, false)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		StructuredContent reportStats `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	return res.StructuredContent
}
