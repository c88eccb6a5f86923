package gateway_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/testtask"
)

// TestSpecTaskThroughTheRESTDoor calls server-everything's research tool,
// which its server runs as a 2025-11-25 task, on the REST door with no
// task_toolsets entry: the call answers with an Antler task id at once, and
// the task API shows the task completed with the report.
func TestSpecTaskThroughTheRESTDoor(t *testing.T) {
	srv := everythingTaskGateway(t)
	a := &api{t: t, url: srv.URL}

	code, res := a.do("POST", "/api/mcp/tools/everything_simulate-research-query/call", `{"arguments": {"topic": "doors"}, "thread_id": "t1"}`)
	sc, _ := res["structuredContent"].(map[string]any)
	id, _ := sc["task_id"].(string)
	if code != 200 || id == "" {
		t.Fatalf("call: %d %v, want a task id", code, res)
	}
	detail := a.awaitDetail(id, "completed", func(d map[string]any) bool {
		if s, _ := d["status"].(string); s == "failed" || s == "cancelled" {
			t.Fatalf("task: %v", d)
		}
		return d["status"] == "completed"
	})
	if !strings.Contains(fmt.Sprint(detail["result"]), "Research Report: doors") {
		t.Errorf("result = %.300v, want the report", detail["result"])
	}
	if detail["task_name"] != "everything_simulate-research-query" {
		t.Errorf("task_name = %v", detail["task_name"])
	}
}

// everythingTaskGateway serves a key-less gateway over server-everything
// (stdio) with the durable runtime running, for the spec-task door tests.
func everythingTaskGateway(t *testing.T) *httptest.Server {
	t.Helper()
	doc := fmt.Sprintf(`{"mcpServers": {"everything": {"command": "node", "args": [%q]}}}`, testnpm.Everything(t))
	rt := testtask.New(t, doc, testtask.FastConfig())
	rt.Service.Start()
	gw := testgateway.New(t, gateway.Options{Cache: rt.Cache, Auth: principal.New(nil), Tasks: rt.Service})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { gw.Close(); srv.Close() })
	return srv
}
