package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSpecTaskThroughTheMCPDoor calls server-everything's research tool,
// which its server runs as a 2025-11-25 task, with a plain tools/call on
// /mcp, in a session and statelessly: like the REST door, the call is
// submitted as a durable task and answers with an Antler task id, not
// made as a plain upstream call by the door's fast path.
func TestSpecTaskThroughTheMCPDoor(t *testing.T) {
	srv := everythingTaskGateway(t)
	post := func(hdr map[string]string, msg string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(msg))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"everything_simulate-research-query","arguments":{"topic":"doors"},"_meta":{"antler/thread_id":"t1"%s}}}`
	taskID := func(b []byte) string {
		t.Helper()
		if i := strings.Index(string(b), "data: "); i >= 0 && strings.HasPrefix(string(b), "event:") {
			b = []byte(strings.TrimSpace(string(b)[i+len("data: "):]))
		}
		var msg struct {
			Result struct {
				StructuredContent struct {
					TaskID string `json:"task_id"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		_ = json.Unmarshal(b, &msg)
		return msg.Result.StructuredContent.TaskID
	}

	resp, _ := post(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	hdr := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	post(hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, b := post(hdr, fmt.Sprintf(call, "")); taskID(b) == "" {
		t.Errorf("session call: %.400s, want a task id", b)
	}
	modern := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "everything_simulate-research-query"}
	if _, b := post(modern, fmt.Sprintf(call, `,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}`)); taskID(b) == "" {
		t.Errorf("stateless call: %.400s, want a task id", b)
	}
}
