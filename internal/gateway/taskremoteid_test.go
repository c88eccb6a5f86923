package gateway_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// The real reports server names its own task id in the errors it gives: a
// task it no longer knows fails with `report task "<id>" was not found`, and
// a backend outage answers `... while reading task <id>; try again`. Stored
// as the task's error and its last poll error, and shown to the agent, they
// carry a placeholder instead; no response the gateway sends holds a remote
// id.
func TestTaskErrorsHideTheRemoteTaskID(t *testing.T) {
	doc := fmt.Sprintf(`{"mcpServers": {"reports": {"type": "http", "url": %q,
		"task_toolsets": [{"name": "report-generation",
			"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report"}]}}}`,
		testmcp.StartReportsHTTP(t)+"/mcp")
	a, store, _, responses := newTaskAPI(t, doc)
	submit := func(args string) string {
		t.Helper()
		code, res := a.do("POST", "/api/mcp/tools/reports_submit_report/call", `{"arguments": `+args+`, "thread_id": "t1"}`)
		sc, _ := res["structuredContent"].(map[string]any)
		id, _ := sc["task_id"].(string)
		if code != 200 || id == "" {
			t.Fatalf("submit: %d %v", code, res)
		}
		return id
	}
	gone := submit(`{"topic": "q3", "not_found": true}`)
	flaky := submit(`{"topic": "q4", "status_is_error": true}`)

	goneDetail := awaitStatus(t, a, gone, "failed")
	flakyDetail := a.awaitDetail(flaky, "a poll error", func(d map[string]any) bool { return d["last_poll_error"] != nil })
	if got, want := goneDetail["error"], `report task "`+ordinary.RemoteIDPlaceholder+`" was not found`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if got, _ := flakyDetail["last_poll_error"].(string); !strings.Contains(got, "while reading task "+ordinary.RemoteIDPlaceholder+"; try again") {
		t.Errorf("last_poll_error %q, want the placeholder", got)
	}
	a.do("POST", "/api/mcp/tools/list_background_tasks/call", `{"arguments": {}, "thread_id": "t1"}`)

	rows, err := store.ListByThread(context.Background(), task.Scope{User: principal.Default.User, Thread: "t1"}, 10, false)
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows %v, %v", rows, err)
	}
	body := responses.String()
	for _, r := range rows {
		if r.RemoteTaskID == "" || strings.Contains(r.Error+r.LastPollError, r.RemoteTaskID) {
			t.Errorf("stored errors %q / %q hold the remote id %q", r.Error, r.LastPollError, r.RemoteTaskID)
		}
		if strings.Contains(body, r.RemoteTaskID) {
			t.Errorf("a gateway response holds the remote id %q", r.RemoteTaskID)
		}
	}
}

// An upstream that answers every submit with the same remote id: the second
// submit is refused as a duplicate, and the refusal does not quote the id.
func TestDuplicateSubmitDoesNotQuoteTheRemoteID(t *testing.T) {
	const remoteID = "fixed-remote-id-5e1f"
	srv := server.NewMCPServer("fixed", "1.0.0", server.WithToolCapabilities(false))
	payload := map[string]any{"task_id": remoteID, "status": "running"}
	for _, name := range []string{"submit", "status"} {
		srv.AddTool(mcp.NewTool(name, mcp.WithString("task_id")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(payload, "running"), nil
		})
	}
	srv.AddTool(mcp.NewTool("cancel", mcp.WithString("task_id")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultStructured(map[string]any{"task_id": remoteID, "status": "cancelled"}, "cancelled"), nil
	})
	upstream := httptest.NewServer(server.NewStreamableHTTPServer(srv))
	t.Cleanup(upstream.Close)
	a, _, _, responses := newTaskAPI(t, fmt.Sprintf(`{"mcpServers": {"fixed": {"type": "http", "url": %q,
		"task_toolsets": [{"name": "job", "submit_tool": "submit", "status_tool": "status", "cancel_tool": "cancel"}]}}}`, upstream.URL+"/mcp"))
	if code, res := a.do("POST", "/api/mcp/tools/fixed_submit/call", `{"arguments": {}, "thread_id": "t1"}`); code != 200 || res["isError"] == true {
		t.Fatalf("first submit: %d %v", code, res)
	}
	code, res := a.do("POST", "/api/mcp/tools/fixed_submit/call", `{"arguments": {}, "thread_id": "t1"}`)
	if code != 200 || res["isError"] != true || !strings.Contains(text(res), "already tracked for server 'fixed'") {
		t.Fatalf("second submit: %d %v, want a duplicate refusal", code, res)
	}
	if strings.Contains(responses.String(), remoteID) {
		t.Errorf("a gateway response quotes the remote id: %s", responses.String())
	}
}
