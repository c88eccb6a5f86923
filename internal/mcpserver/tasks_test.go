package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/mcpserver"
)

// TestTaskToolsOverMCP: with the task runtime running, /mcp lists the
// submit tool (with its toolset under _meta) and the two host tools; a
// submit carrying its secret in _meta makes a task in the MCP session's
// thread that the REST task API and list_background_tasks both see; a
// submit without the secret is refused before reaching the server.
func TestTaskToolsOverMCP(t *testing.T) {
	h := newTaskHost(t, `{"headers": {"X-Report-Token": "k"}}`)

	c := h.client("2025-11-25", "")
	res, err := c.ListTools(h.ctx(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]mcp.Tool{}
	for _, tl := range res.Tools {
		listed[tl.Name] = tl
	}
	for _, name := range []string{"reports_submit_report", "list_background_tasks", "cancel_background_task"} {
		if _, ok := listed[name]; !ok {
			t.Errorf("%s not listed: %v", name, res.Tools)
		}
	}
	if _, ok := listed["reports_get_report_status"]; ok {
		t.Error("the status tool is listed; it is hidden as on REST")
	}
	if ts := listed["reports_submit_report"].Meta; ts == nil || ts.AdditionalFields[mcpserver.MetaTaskToolset] == nil {
		t.Errorf("submit tool _meta %+v lacks %s", ts, mcpserver.MetaTaskToolset)
	}

	refused := call(t, c, "reports_submit_report", map[string]any{"topic": "q3"}, nil)
	if !refused.IsError {
		t.Errorf("submit without the secret: %+v, want refused", refused)
	}
	sub := call(t, c, "reports_submit_report", map[string]any{"topic": "q3", "delay_ms": 60000},
		map[string]any{mcpserver.MetaSecrets: map[string]any{"k": "s3cret"}})
	sc, _ := sub.StructuredContent.(map[string]any)
	id, _ := sc["task_id"].(string)
	if sub.IsError || !strings.HasPrefix(id, "mcp-task-") {
		t.Fatalf("submit: %+v", sub)
	}
	// The header carrier: X-Antler-Secret-K is the secret "k".
	hc := h.client("2025-11-25", "", transport.WithHTTPHeaders(map[string]string{mcpserver.HeaderSecretPrefix + "K": "s3cret"}))
	if viaHeader := call(t, hc, "reports_submit_report", map[string]any{"topic": "q4", "delay_ms": 60000}, nil); viaHeader.IsError {
		t.Errorf("submit with the secret in a header: %+v", viaHeader)
	}
	thread := mcpserver.SessionThread(c.GetSessionId())
	code, body := h.rest("GET", "/api/threads/"+thread+"/mcp-tasks/"+id, "", "")
	if code != 200 {
		t.Errorf("REST sees the MCP task in thread %s: %d %s", thread, code, body)
	}
	list := call(t, c, "list_background_tasks", map[string]any{}, nil)
	var got struct {
		Tasks []struct {
			TaskID string `json:"task_id"`
		} `json:"tasks"`
	}
	b, _ := json.Marshal(list.StructuredContent)
	_ = json.Unmarshal(b, &got)
	if len(got.Tasks) != 1 || got.Tasks[0].TaskID != id {
		t.Errorf("list_background_tasks in the session's thread: %s", b)
	}
	if cancel := call(t, c, "cancel_background_task", map[string]any{"task": id}, nil); cancel.IsError {
		t.Errorf("cancel: %+v", cancel)
	}
}
