package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// answersDoc configures the real reports server twice: "reports" with a
// respond_tool, so its tasks take answers, and "plain" without one.
func answersDoc(url string) string {
	return fmt.Sprintf(`{"mcpServers": {
		"reports": {"type": "http", "url": %q, "task_toolsets": [{"name": "report-generation",
			"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report",
			"respond_tool": "respond_report"}]},
		"plain": {"type": "http", "url": %q, "task_toolsets": [{"name": "plain-report",
			"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report"}]}}}`, url, url)
}

// submitReport submits through the REST door and returns the local task id.
func submitReport(t *testing.T, a *api, tool, args string) string {
	t.Helper()
	code, res := a.do("POST", "/api/mcp/tools/"+tool+"/call", `{"arguments": `+args+`, "thread_id": "t1"}`)
	sc, _ := res["structuredContent"].(map[string]any)
	id, _ := sc["task_id"].(string)
	if code != 200 || id == "" {
		t.Fatalf("submit: %d %v", code, res)
	}
	return id
}

// awaitStatus polls the task API until task id of thread t1 is in status.
func awaitStatus(t *testing.T, a *api, id, status string) map[string]any {
	t.Helper()
	return a.awaitDetail(id, "status "+status, func(d map[string]any) bool { return d["status"] == status })
}

// awaitDetail polls the task API until the detail of task id of thread t1
// satisfies ok, and returns it; what says what was awaited.
func (a *api) awaitDetail(id, what string, ok func(detail map[string]any) bool) map[string]any {
	a.t.Helper()
	var d map[string]any
	eventually.Check(a.t, fmt.Sprintf("task %s: %s", id, what), func() (bool, string) {
		code, got := a.do("GET", "/api/threads/t1/mcp-tasks/"+id, "")
		d = got
		return code == 200 && ok(got), fmt.Sprintf("%d %v", code, got)
	})
	return d
}

// nextEventOf returns the stream's next event of task id.
func nextEventOf(t *testing.T, s *sse, id string) tasknotify.Envelope {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case env, ok := <-s.events:
			if !ok {
				t.Fatalf("the event stream ended before an event of %s", id)
			}
			if env.TaskID == id {
				return env
			}
		case <-timeout:
			t.Fatalf("no event of %s", id)
		}
	}
}

// TestAnswerInputRequiredThroughTheAPI runs the reports server's question
// round trip through the REST API: a task asks (the question in the task
// API and the event stream, whose instruction says how to answer), its
// owner's answer is recorded and delivered once, and the report reflects
// it; decline completes for a general audience; a delivery that fails is
// retried under the same answer id; and the refusals: another user's
// answer (404), an answer to a task not waiting for one (409) or whose
// toolset has no respond_tool (422), a malformed answer (400). The
// answer's content is in no refusal, no task view and no log line.
func TestAnswerInputRequiredThroughTheAPI(t *testing.T) {
	const canary = "canary-audience-51c9"
	alice, _, logs, _ := newTaskAPI(t, answersDoc(testmcp.StartReportsHTTP(t)+"/mcp"), eventKeys...)
	alice = alice.as("alice-key")
	bob := alice.as("bob-key")
	events := openSSE(t, alice.url+"/api/threads/t1/mcp-tasks/events", "alice-key", "0")

	id := submitReport(t, alice, "reports_submit_report", `{"topic": "q3", "delay_ms": 0, "ask": "Who reads the report?", "respond_errors": 1}`)
	d := awaitStatus(t, alice, id, "input_required")
	if q, _ := d["input_required"].(map[string]any); q["question"] != "Who reads the report?" {
		t.Errorf("input_required = %v, want the question", d["input_required"])
	}
	if v, _ := d["answer"].(map[string]any); v["can_answer"] != true || v["status"] != nil {
		t.Errorf("answer view before any answer = %v", d["answer"])
	}
	asked := nextEventOf(t, events, id)
	if !strings.Contains(string(asked.Event), `"question":"Who reads the report?"`) || asked.Instruction != tasknotify.AnswerInstruction ||
		!strings.Contains(asked.Instruction, "/mcp-tasks/{task_id}/input") {
		t.Errorf("question event: %s, instruction %q", asked.Event, asked.Instruction)
	}

	accept := `{"action": "accept", "content": {"audience": "` + canary + `"}}`
	refusals := []struct {
		name string
		a    *api
		path string
		body string
		code int
		want string
	}{
		{"another user's task", bob, id, accept, 404, "MCP task not found"},
		{"an unknown action", alice, id, `{"action": "maybe", "content": {"audience": "` + canary + `"}}`, 400, "action: must be one of"},
		{"decline with content", alice, id, `{"action": "decline", "content": {"audience": "` + canary + `"}}`, 400, "content: must be omitted"},
		{"an unknown field", alice, id, `{"action": "accept", "answer": "` + canary + `"}`, 400, "body: must be one JSON object"},
	}
	for _, r := range refusals {
		code, res := r.a.do("POST", "/api/threads/t1/mcp-tasks/"+r.path+"/input", r.body)
		if msg, _ := res["error"].(string); code != r.code || !strings.Contains(msg, r.want) || strings.Contains(msg, canary) {
			t.Errorf("%s: %d %v, want %d %q without the content", r.name, code, res, r.code, r.want)
		}
	}

	code, res := alice.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", accept)
	if v, _ := res["answer"].(map[string]any); code != 200 || res["status"] != "working" || v["status"] != "pending" || v["recorded_at"] == nil {
		t.Fatalf("answer: %d %v", code, res)
	}
	if b, _ := json.Marshal(res); strings.Contains(string(b), canary) {
		t.Errorf("the task view shows the answer's content: %s", b)
	}
	if code, res := alice.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", accept); code != 409 {
		t.Errorf("a second answer while one is pending: %d %v, want 409", code, res)
	}
	d = awaitStatus(t, alice, id, "completed")
	if r, _ := d["result"].(string); !strings.Contains(r, `"audience":"`+canary+`"`) {
		t.Errorf("result %q does not reflect the answer", d["result"])
	}
	if v, _ := d["answer"].(map[string]any); v["status"] != "delivered" {
		t.Errorf("answer view after delivery = %v", d["answer"])
	}
	_, st := alice.do("POST", "/api/mcp/tools/reports_report_stats/call", `{"arguments": {}, "thread_id": "t1"}`)
	var stats struct {
		PerTask map[string]struct {
			AnswerCalls   map[string]int `json:"answer_calls"`
			AnswerApplied string         `json:"answer_applied"`
		} `json:"per_task"`
	}
	b, _ := json.Marshal(st["structuredContent"])
	_ = json.Unmarshal(b, &stats)
	var applied []string
	for _, ts := range stats.PerTask {
		if ts.AnswerApplied != "" {
			applied = append(applied, ts.AnswerApplied)
			if len(ts.AnswerCalls) != 1 || ts.AnswerCalls[ts.AnswerApplied] != 2 {
				t.Errorf("respond calls per answer id = %v, want one id, delivered twice (a failure, then the retry)", ts.AnswerCalls)
			}
		}
	}
	if len(applied) != 1 || !strings.HasPrefix(applied[0], "mcp-answer-") {
		t.Errorf("answers applied upstream: %v, want one", applied)
	}
	if code, res := alice.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", accept); code != 409 || !strings.Contains(fmt.Sprint(res["error"]), "not input_required") {
		t.Errorf("answer to a completed task: %d %v, want 409", code, res)
	}

	t.Run("decline", func(t *testing.T) {
		id := submitReport(t, alice, "reports_submit_report", `{"topic": "q4", "delay_ms": 0, "ask": "Who reads the report?"}`)
		awaitStatus(t, alice, id, "input_required")
		if code, res := alice.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", `{"action": "decline"}`); code != 200 {
			t.Fatalf("decline: %d %v", code, res)
		}
		if r, _ := awaitStatus(t, alice, id, "completed")["result"].(string); !strings.Contains(r, "declined") {
			t.Errorf("result %q does not reflect the decline", r)
		}
	})
	t.Run("a task not waiting for input", func(t *testing.T) {
		id := submitReport(t, alice, "reports_submit_report", `{"topic": "q5", "delay_ms": 600000}`)
		code, res := alice.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", `{"action": "decline"}`)
		if msg, _ := res["error"].(string); code != 409 || !strings.Contains(msg, "not input_required") {
			t.Errorf("answer to a submitted task: %d %v, want 409", code, res)
		}
	})
	t.Run("a toolset without respond_tool", func(t *testing.T) {
		id := submitReport(t, alice, "plain_submit_report", `{"topic": "q6", "delay_ms": 0, "input_required": true}`)
		d := awaitStatus(t, alice, id, "input_required")
		if v, _ := d["answer"].(map[string]any); v["can_answer"] != false {
			t.Errorf("answer view = %v, want can_answer false", d["answer"])
		}
		code, res := alice.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", `{"action": "decline"}`)
		if msg, _ := res["error"].(string); code != 422 || !strings.Contains(msg, "driver cannot take answers") {
			t.Errorf("answer to a task that cannot take one: %d %v, want 422", code, res)
		}
		env := nextEventOf(t, events, id)
		if env.Instruction != tasknotify.Instruction || !strings.Contains(env.Instruction, "cannot resume the remote task with user input yet") {
			t.Errorf("instruction for a task that cannot take answers: %q", env.Instruction)
		}
	})
	if strings.Contains(logs.String(), canary) {
		t.Error("the answer's content appears in the log")
	}
}

// TestRefusedAnswerGivesTheQuestionBack: the upstream task is cancelled
// behind Antler's back while it asks, so the respond tool refuses the
// answer (answer_refused). The task is input_required again with the
// refusal as its error, in the task view and as an event, and the answer
// shows refused; the next poll then finds the task cancelled.
func TestRefusedAnswerGivesTheQuestionBack(t *testing.T) {
	base := testmcp.StartReportsHTTP(t)
	a, _, _, _ := newTaskAPI(t, answersDoc(base+"/mcp"))
	events := openSSE(t, a.url+"/api/threads/t1/mcp-tasks/events", "", "0")
	id := submitReport(t, a, "reports_submit_report", `{"topic": "q7", "delay_ms": 0, "ask": "Who reads it?"}`)
	awaitStatus(t, a, id, "input_required")
	nextEventOf(t, events, id)

	// Cancel the remote task directly, as another client of the upstream
	// could; Antler polls an input_required task only every minute.
	ctx := context.Background()
	c := mcpClient(t, base, mcp.LATEST_PROTOCOL_VERSION)
	var stats struct {
		PerTask map[string]any `json:"per_task"`
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "report_stats"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &stats)
	if len(stats.PerTask) != 1 {
		t.Fatalf("upstream tasks: %v", stats.PerTask)
	}
	for remote := range stats.PerTask {
		if _, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "cancel_report", Arguments: map[string]any{"task_id": remote}}}); err != nil {
			t.Fatal(err)
		}
	}

	if code, res := a.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", `{"action": "decline"}`); code != 200 {
		t.Fatalf("answer: %d %v", code, res)
	}
	d := a.awaitDetail(id, "the refusal recorded while input_required", func(d map[string]any) bool {
		return d["status"] == "input_required" && d["error"] != nil
	})
	v, _ := d["answer"].(map[string]any)
	msg, _ := d["error"].(string)
	if !strings.Contains(msg, "refused the answer") || !strings.Contains(msg, "is not waiting for input") || v["status"] != "refused" || v["last_error"] != msg {
		t.Fatalf("after the refusal: error %q, answer %v", msg, v)
	}
	if env := nextEventOf(t, events, id); !strings.Contains(string(env.Event), "refused the answer") || !strings.Contains(string(env.Event), `"status":"input_required"`) {
		t.Errorf("refusal event: %s", env.Event)
	}
}
