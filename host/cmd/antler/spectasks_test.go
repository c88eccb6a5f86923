package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/eventually"
	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/testtask"
)

// mcpClient starts an mcp-go client speaking 2025-11-25 to a host's /mcp.
func mcpClient(t *testing.T, ctx context.Context, base string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(base + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	return c
}

// modernPost sends one 2026-07-28 request declaring the tasks extension,
// with the standard headers (name is Mcp-Name), and returns its result.
func modernPost(t *testing.T, base, method, name string, params map[string]any) map[string]any {
	t.Helper()
	params["_meta"] = map[string]any{mcp.MetaKeyProtocolVersion: mcp.ProtocolVersion20260728,
		mcp.MetaKeyClientCapabilities: map[string]any{"extensions": map[string]any{mcpserver.ExtensionTasks: map[string]any{}}}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, method)
	req.Header.Set(mcp.HeaderName, name)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply struct {
		Result map[string]any `json:"result"`
		Error  any            `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil || reply.Error != nil {
		t.Fatalf("%s: %d %v %v", method, resp.StatusCode, reply.Error, err)
	}
	return reply.Result
}

// TestSpecTasksSurviveAHostCrash creates a 2025-11-25 task and a 2026-07-28
// task through /mcp, SIGKILLs the host while both are being polled,
// restarts it on the same SQLite file, and resumes both from a new client
// session: tasks/get reaches completed, tasks/result (2025-11-25) and the
// inlined result (2026-07-28) are the report, and each completion is
// delivered to the webhook exactly once.
func TestSpecTasksSurviveAHostCrash(t *testing.T) {
	hook := newHookReceiver(t)
	rh := newReportsHost(t, testtask.ReportsToolset, hook)
	antler, args := rh.antler, rh.args
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	host := startServe(t, antler, args...)
	old := mcpClient(t, ctx, host.base)
	resp, err := old.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "tools/call",
		Params: map[string]any{"name": "reports_submit_report", "arguments": map[string]any{"topic": "q3", "delay_ms": 4000}, "task": map[string]any{"ttl": 600000}}})
	if err != nil || resp.Error != nil {
		t.Fatalf("task-augmented tools/call: %v %+v", err, resp)
	}
	var created struct {
		Task mcp.Task `json:"task"`
	}
	if err := json.Unmarshal(resp.Result, &created); err != nil || created.Task.Status != mcp.TaskStatusWorking {
		t.Fatalf("CreateTaskResult: %s %v", resp.Result, err)
	}
	oldID, oldThread := created.Task.TaskId, mcpserver.SessionThread(old.GetSessionId())
	modern := modernPost(t, host.base, "tools/call", "reports_submit_report", map[string]any{"name": "reports_submit_report", "arguments": map[string]any{"topic": "q4", "delay_ms": 4000}})
	newID, _ := modern["taskId"].(string) // the flat 2026-07-28 CreateTaskResult
	if _, nested := modern["task"]; modern["resultType"] != "task" || newID == "" || nested {
		t.Fatalf("2026-07-28 submit: %v", modern)
	}
	// The crash comes while both tasks are tracked: each has been polled.
	host.awaitDetail(oldThread, oldID, "a first poll", polled)
	host.awaitDetail(mcpserver.ModernThread, newID, "a first poll", polled)
	_ = host.cmd.Process.Signal(syscall.SIGKILL)
	_ = host.cmd.Wait()

	again := startServe(t, antler, args...)
	c := mcpClient(t, ctx, again.base)
	eventually.Check(t, "the 2025-11-25 task completing after the crash", func() (bool, string) {
		got, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: oldID}})
		if err != nil {
			t.Fatalf("tasks/get after the restart: %v", err)
		}
		return got.Status == mcp.TaskStatusCompleted, fmt.Sprintf("%+v\n%s", got, again.errb)
	})
	res, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: oldID}})
	if err != nil || res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].(mcp.TextContent).Text, "Report: q3") {
		t.Errorf("tasks/result after the restart: %+v %v", res, err)
	}
	var d map[string]any
	eventually.Check(t, "the 2026-07-28 task completing after the crash", func() (bool, string) {
		d = modernPost(t, again.base, "tasks/get", newID, map[string]any{"taskId": newID})
		return d["status"] == "completed", fmt.Sprintf("%v\n%s", d, again.errb)
	})
	if b, _ := json.Marshal(d["result"]); !strings.Contains(string(b), "Report: q4") {
		t.Errorf("inlined result after the restart: %s", b)
	}

	// Both rows are the REST task API's too, and each completion is
	// delivered once.
	for _, row := range []struct{ thread, id string }{{oldThread, oldID}, {mcpserver.ModernThread, newID}} {
		awaitNotified(t, again, row.thread, row.id)
	}
	per := map[string]int{}
	for _, d := range hook.deliveries() {
		if strings.Contains(string(d.Event), `"status":"completed"`) {
			per[d.TaskID]++
		}
	}
	if per[oldID] != 1 || per[newID] != 1 || len(per) != 2 {
		t.Errorf("completions delivered per task: %v", per)
	}
}
