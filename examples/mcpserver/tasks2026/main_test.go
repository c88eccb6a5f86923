package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const declared = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// post sends one JSON-RPC request through the task layer over HTTP, with
// Mcp-Name when name is not "", and returns the status and the response.
func post(t *testing.T, h http.Handler, body, name string) (int, map[string]json.RawMessage) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatalf("response %q: %v", rec.Body.String(), err)
	}
	return rec.Code, resp
}

// TestTaskLayer: the extension's rules as the server keeps them: a task
// only for a request that declares the extension, Mcp-Name on task
// requests, each input request answered once.
func TestTaskLayer(t *testing.T) {
	j, _ := openJobs("")
	h := (&handler{jobs: j}).wrapHTTP(http.NotFoundHandler())

	_, resp := post(t, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"long_job","arguments":{"topic":"x"}}}`, "")
	if !strings.Contains(string(resp["error"]), "-32021") {
		t.Errorf("undeclared call = %s, want -32021", resp["error"])
	}
	_, resp = post(t, h, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"long_job","arguments":{"topic":"x","ask":true},`+declared+`}}`, "")
	var created struct {
		ResultType, TaskID, Status string
	}
	if err := json.Unmarshal(resp["result"], &created); err != nil || created.ResultType != "task" || created.TaskID == "" {
		t.Fatalf("call = %s, want a task handle", resp["result"])
	}
	id := created.TaskID
	get := `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"` + id + `",` + declared + `}}`
	if code, resp := post(t, h, get, ""); code != http.StatusBadRequest || !strings.Contains(string(resp["error"]), "-32020") {
		t.Errorf("tasks/get without Mcp-Name = %d %s, want 400 -32020", code, resp["error"])
	}
	if _, resp := post(t, h, get, id); !strings.Contains(string(resp["result"]), `"inputRequests"`) {
		t.Errorf("tasks/get = %s, want the input request", resp["result"])
	}
	update := `{"jsonrpc":"2.0","id":4,"method":"tasks/update","params":{"taskId":"` + id + `","inputResponses":{"format":{"action":"accept","content":{"format":"pdf"}}},` + declared + `}}`
	for range 2 {
		if _, resp := post(t, h, update, id); string(resp["result"]) != `{"resultType":"complete"}` {
			t.Errorf("tasks/update = %s, want an empty acknowledgement", resp["result"])
		}
	}
	if st := j.statsCopy(); st.UpdatesApplied != 1 || st.UpdatesIgnored != 1 {
		t.Errorf("stats %+v, want the update applied once", st)
	}
	unknown := `{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"nope",` + declared + `}}`
	if _, resp := post(t, h, unknown, "nope"); !strings.Contains(string(resp["error"]), "-32602") {
		t.Errorf("unknown task = %s, want -32602", resp["error"])
	}
}
