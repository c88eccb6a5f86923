package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/eventually"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/spectask"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
)

// askQuestion is the reports server's question knob in these tests.
const askQuestion = "Which audience is the report for?"

// twoKeys are alice's and bob's real API keys.
var twoKeys = []settings.Key{{Key: "ka", User: "alice", Role: settings.RoleAgent}, {Key: "kb", User: "bob", Role: settings.RoleAgent}}

// answerHost is a real gateway over the reports server whose toolset has
// its respond_tool, with alice's and bob's keys.
func answerHost(t *testing.T) *host {
	return newToolsetHost(t, testtask.ReportsAnswerToolset, "", twoKeys...)
}

// restTask reads a task through the REST task API as key.
func (h *host) restTask(key, thread, id string) (int, map[string]any) {
	h.t.Helper()
	code, body := h.rest("GET", "/api/threads/"+thread+"/mcp-tasks/"+id, key, "")
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	return code, m
}

// answerStatus is the REST view's answer.status ("" for null).
func answerStatus(m map[string]any) string {
	a, _ := m["answer"].(map[string]any)
	s, _ := a["status"].(string)
	return s
}

// waitStatus reads the task id with read until its view has status.
func (h *host) waitStatus(id, status string, read func() map[string]any) map[string]any {
	h.t.Helper()
	var v map[string]any
	eventually.Check(h.t, fmt.Sprintf("task %s to be %s", id, status), func() (bool, string) {
		v = read()
		return v["status"] == status, fmt.Sprint(v)
	})
	return v
}

// waitDetail polls 2026-07-28 tasks/get as key until the task has status.
func (h *host) waitDetail(key, id, status string) map[string]any {
	h.t.Helper()
	return h.waitStatus(id, status, func() map[string]any {
		_, r := h.modern(key, "tasks/get", id, map[string]any{"taskId": id}, true)
		return r.object(h.t)
	})
}

// TestTaskUpdate20260728 answers a durable task's question through /mcp
// with tasks/update: the inputRequests id tasks/get lists is the one
// taken, every refusal is the JSON-RPC error of the REST route's (-32602
// with its reason, an unknown id named), bob's key finds no task, the good
// answer is in the store before the ack, and the report reflects it, the
// same task answered as seen through the REST task API.
func TestTaskUpdate20260728(t *testing.T) {
	h := answerHost(t)
	_, created := h.modern("ka", "tools/call", submitTool, map[string]any{"name": submitTool,
		"arguments": map[string]any{"topic": "margins", "delay_ms": 0, "ask": askQuestion}}, true)
	id := createdID(t, created.object(t))
	d := h.waitDetail("ka", id, "input_required")
	reqs, _ := d["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("inputRequests: %v", d)
	}
	var key string
	for k, v := range reqs {
		key = k
		q, _ := v.(map[string]any)
		p, _ := q["params"].(map[string]any)
		if q["method"] != "elicitation/create" || p["message"] != askQuestion || p["requestedSchema"] == nil {
			t.Errorf("input request %s: %v", k, v)
		}
	}
	if msg, _ := d["statusMessage"].(string); !strings.Contains(msg, "tasks/update") {
		t.Errorf("statusMessage %q does not say how to answer", msg)
	}
	update := func(apiKey, name string, responses any) (int, rpcReply) {
		t.Helper()
		return h.modern(apiKey, "tasks/update", name, map[string]any{"taskId": id, "inputResponses": responses}, true)
	}
	for _, tt := range []struct {
		name      string
		key, hdr  string
		responses any
		code      int
		text      string
	}{
		{"another principal's task", "kb", id, map[string]any{key: map[string]any{"action": "decline"}}, mcp.INVALID_PARAMS, "task not found"},
		{"no Mcp-Name", "ka", "", map[string]any{key: map[string]any{"action": "decline"}}, mcp.HEADER_MISMATCH, "Mcp-Name"},
		{"an unknown input request id", "ka", id, map[string]any{"format": map[string]any{"action": "decline"}}, mcp.INVALID_PARAMS, `unknown input request id "format"`},
		{"accept without content", "ka", id, map[string]any{key: map[string]any{"action": "accept"}}, mcp.INVALID_PARAMS, "content: required"},
		{"content not an object", "ka", id, map[string]any{key: map[string]any{"action": "accept", "content": "yes"}}, mcp.INVALID_PARAMS, "content: must be a JSON object"},
		{"no inputResponses", "ka", id, nil, mcp.INVALID_PARAMS, "inputResponses"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, r := update(tt.key, tt.hdr, tt.responses)
			if status != 400 || r.Error == nil || r.Error.Code != tt.code || !strings.Contains(r.Error.Message, tt.text) {
				t.Errorf("tasks/update: %d %+v, want 400 %d with %q", status, r.Error, tt.code, tt.text)
			}
		})
	}
	if code, view := h.restTask("ka", mcpserver.ModernThread, id); code != 200 || view["status"] != "input_required" || answerStatus(view) != "" {
		t.Fatalf("after the refusals REST shows %d %v, want the task still waiting and unanswered", code, view)
	}

	status, r := update("ka", id, map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"audience": "the board"}}})
	if ack := r.object(t); status != 200 || len(ack) != 1 || ack["resultType"] != "complete" {
		t.Fatalf("tasks/update: %d %v, want an empty ack", status, ack)
	}
	// Recorded before the ack: the REST view has the answer at once.
	if _, view := h.restTask("ka", mcpserver.ModernThread, id); answerStatus(view) == "" {
		t.Errorf("REST right after the ack: %v, want the answer recorded", view)
	}
	if status, r := update("ka", id, map[string]any{key: map[string]any{"action": "decline"}}); status != 400 || r.Error == nil ||
		!(strings.Contains(r.Error.Message, "pending") || strings.Contains(r.Error.Message, "not input_required")) {
		t.Errorf("a second answer: %d %+v, want the 409-equivalent refusal", status, r.Error)
	}
	done := h.waitDetail("ka", id, "completed")
	if b, _ := json.Marshal(done["result"]); !strings.Contains(string(b), `the user answered {\"audience\":\"the board\"}`) {
		t.Errorf("the report does not reflect the answer: %s", b)
	}
	if code, view := h.restTask("ka", mcpserver.ModernThread, id); code != 200 || view["status"] != "completed" || answerStatus(view) != "delivered" {
		t.Errorf("REST after completion: %d %v, want completed with the answer delivered", code, view)
	}
	if code, _ := h.restTask("kb", mcpserver.ModernThread, id); code != 404 {
		t.Errorf("REST with bob's key: %d, want 404", code)
	}
}

// TestTaskUpdateWithoutRespondTool: a task whose toolset cannot take
// answers says so on tasks/update (the REST route's 422).
func TestTaskUpdateWithoutRespondTool(t *testing.T) {
	h := newTaskHost(t, "", twoKeys...)
	_, created := h.modern("ka", "tools/call", submitTool, map[string]any{"name": submitTool,
		"arguments": map[string]any{"topic": "margins", "delay_ms": 0, "ask": askQuestion}}, true)
	id := createdID(t, created.object(t))
	d := h.waitDetail("ka", id, "input_required")
	var key string
	for k := range d["inputRequests"].(map[string]any) {
		key = k
	}
	status, r := h.modern("ka", "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": "decline"}}}, true)
	if status != 400 || r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS || !strings.Contains(r.Error.Message, "cannot take answers") {
		t.Errorf("tasks/update: %d %+v, want -32602 saying the driver cannot take answers", status, r.Error)
	}
}

// recordingElicitor answers every elicitation with content, recording
// what it was asked.
type recordingElicitor struct {
	mu      sync.Mutex
	asked   []mcp.ElicitationParams
	content map[string]any
}

func (e *recordingElicitor) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.asked = append(e.asked, req.Params)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: e.content}}, nil
}

// elicitingClient is an mcp-go 2025-11-25 client on /mcp as key that
// answers elicitations with e.
func (h *host) elicitingClient(key string, e client.ElicitationHandler) *client.Client {
	h.t.Helper()
	tr, err := transport.NewStreamableHTTP(h.url+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}))
	if err != nil {
		h.t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125), client.WithElicitationHandler(e))
	h.t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(h.ctx()); err != nil {
		h.t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20251125
	init.Params.ClientInfo = mcp.Implementation{Name: "eliciting", Version: "1"}
	if _, err := c.Initialize(h.ctx(), init); err != nil {
		h.t.Fatal(err)
	}
	return c
}

// waitREST polls the REST task view as key until the task has status.
func (h *host) waitREST(key, thread, id, status string) map[string]any {
	h.t.Helper()
	return h.waitStatus(id, status, func() map[string]any {
		_, view := h.restTask(key, thread, id)
		return view
	})
}

// TestTaskQuestionOnTasksResult20251125: mcp-go's client, declaring
// elicitation, calls tasks/result on a durable task waiting for input;
// the question reaches it as elicitation/create with the related-task
// _meta, its answer is recorded and delivered, and the same tasks/result
// returns the report that reflects it; the REST task API shows the task
// answered. A client without elicitation keeps waiting, and the answer
// given through REST ends its tasks/result.
func TestTaskQuestionOnTasksResult20251125(t *testing.T) {
	h := answerHost(t)
	e := &recordingElicitor{content: map[string]any{"answer": "the board"}}
	c := h.elicitingClient("ka", e)
	args := map[string]any{"topic": "margins", "delay_ms": 0, "ask": askQuestion}
	tk := taskOf(t, rawCall(t, c, "tools/call", map[string]any{"name": submitTool, "arguments": args, "task": map[string]any{}}).object(t))
	id := tk["taskId"].(string)
	thread := mcpserver.SessionThread(c.GetSessionId())
	h.waitREST("ka", thread, id, "input_required")
	if got, err := c.GetTask(h.ctx(), mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}}); err != nil || !strings.Contains(got.StatusMessage, "tasks/result") {
		t.Errorf("tasks/get of the waiting task: %+v %v, want a statusMessage saying how to answer", got, err)
	}

	done, err := c.TaskResult(h.ctx(), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err != nil || done.IsError || len(done.Content) != 1 || !strings.Contains(done.Content[0].(mcp.TextContent).Text, `the user answered {"answer":"the board"}`) {
		t.Fatalf("tasks/result: %+v %v, want the report with the answer", done, err)
	}
	e.mu.Lock()
	asked := append([]mcp.ElicitationParams(nil), e.asked...)
	e.mu.Unlock()
	if len(asked) != 1 || asked[0].Message != askQuestion || asked[0].RequestedSchema == nil || asked[0].Meta == nil ||
		fmt.Sprint(asked[0].Meta.AdditionalFields[spectask.RelatedTaskKey]) != fmt.Sprint(map[string]any{"taskId": id}) {
		t.Errorf("elicitations asked: %+v", asked)
	}
	if view := h.waitREST("ka", thread, id, "completed"); answerStatus(view) != "delivered" {
		t.Errorf("REST: %v, want the answer delivered", view)
	}

	// A client without elicitation: tasks/result waits; REST answers.
	plain := h.client("2025-11-25", "ka")
	tk = taskOf(t, rawCall(t, plain, "tools/call", map[string]any{"name": submitTool, "arguments": args, "task": map[string]any{}}).object(t))
	id = tk["taskId"].(string)
	thread = mcpserver.SessionThread(plain.GetSessionId())
	h.waitREST("ka", thread, id, "input_required")
	got := make(chan *mcp.TaskResultResult, 1)
	go func() {
		res, err := plain.TaskResult(h.ctx(), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
		if err != nil {
			t.Errorf("tasks/result without elicitation: %v", err)
		}
		got <- res
	}()
	if code, body := h.rest("POST", "/api/threads/"+thread+"/mcp-tasks/"+id+"/input", "ka", `{"action": "accept", "content": {"answer": "investors"}}`); code != 200 {
		t.Fatalf("REST answer: %d %s", code, body)
	}
	if res := <-got; res == nil || !strings.Contains(res.Content[0].(mcp.TextContent).Text, `the user answered {"answer":"investors"}`) {
		t.Errorf("tasks/result after the REST answer: %+v", res)
	}
}

// sseReader reads the JSON-RPC messages of an SSE response.
type sseReader struct{ sc *bufio.Scanner }

func (s sseReader) next(t *testing.T) map[string]any {
	t.Helper()
	for s.sc.Scan() {
		if d, ok := strings.CutPrefix(s.sc.Text(), "data: "); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(d), &m); err != nil {
				t.Fatalf("SSE data %q: %v", d, err)
			}
			return m
		}
	}
	t.Fatalf("the stream ended: %v", s.sc.Err())
	return nil
}

// rawSession initializes a 2025-11-25 session as key declaring caps and
// returns its headers.
func (h *host) rawSession(key, caps string) map[string]string {
	h.t.Helper()
	auth := map[string]string{"Authorization": "Bearer " + key}
	resp, _ := h.rawPost(auth, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}}`)
	hdr := map[string]string{"Authorization": "Bearer " + key, "Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	h.rawPost(hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return hdr
}

// TestTaskQuestionAnswerIsBoundToTheSession performs the attack: bob, with
// his own key, posts a response to the elicitation/create alice's
// tasks/result is waiting on, on alice's session (404: not his) and on his
// own (not taken: the question is alice's session's), and asks tasks/result
// and tasks/update of her task (not found); alice's own answer is the one
// the report reflects. A malformed answer ends her tasks/result with the
// REST route's validation error, and the task keeps waiting.
func TestTaskQuestionAnswerIsBoundToTheSession(t *testing.T) {
	h := answerHost(t)
	alice := h.rawSession("ka", `{"elicitation":{}}`)
	bob := h.rawSession("kb", `{"elicitation":{}}`)
	_, created := h.rawPost(alice, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+submitTool+`","arguments":{"topic":"margins","delay_ms":0,"ask":"`+askQuestion+`"},"task":{}}}`)
	var cr struct {
		Result struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		} `json:"result"`
	}
	if json.Unmarshal(created, &cr) != nil || cr.Result.Task.TaskID == "" {
		t.Fatalf("task-augmented call: %s", created)
	}
	id := cr.Result.Task.TaskID
	thread := mcpserver.SessionThread(alice["Mcp-Session-Id"])
	h.waitREST("ka", thread, id, "input_required")

	if _, r := h.rawPost(bob, `{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"`+id+`"}}`); !strings.Contains(string(r), "task not found") {
		t.Errorf("bob's tasks/result of alice's task: %s, want task not found", r)
	}
	if _, r := h.modern("kb", "tasks/update", id, map[string]any{"taskId": id, "inputResponses": map[string]any{"x": map[string]any{"action": "decline"}}}, true); r.Error == nil || r.Error.Message != "task not found" {
		t.Errorf("bob's tasks/update of alice's task: %+v, want task not found", r.Error)
	}

	// A malformed answer ends the tasks/result; the task keeps waiting.
	stream, ask := h.openResult(alice, id, 4)
	reply := func(hdr map[string]string, reqID any, result string) int {
		t.Helper()
		b, _ := json.Marshal(reqID)
		resp, _ := h.rawPost(hdr, `{"jsonrpc":"2.0","id":`+string(b)+`,"result":`+result+`}`)
		return resp.StatusCode
	}
	if code := reply(alice, ask["id"], `{"action":"accept"}`); code != http.StatusAccepted {
		t.Fatalf("alice's answer: %d, want 202", code)
	}
	if end := stream.next(t); end["id"] != float64(4) || !strings.Contains(fmt.Sprint(end["error"]), "content: required") {
		t.Errorf("tasks/result after a malformed answer: %v, want the validation error", end)
	}
	if _, view := h.restTask("ka", thread, id); view["status"] != "input_required" || answerStatus(view) != "" {
		t.Fatalf("after the malformed answer: %v, want the task still waiting", view)
	}

	stream, ask = h.openResult(alice, id, 5)
	forged := `{"action":"accept","content":{"answer":"bob was here"}}`
	if code := reply(map[string]string{"Authorization": "Bearer kb", "Mcp-Session-Id": alice["Mcp-Session-Id"], "Mcp-Protocol-Version": "2025-11-25"}, ask["id"], forged); code != http.StatusNotFound {
		t.Errorf("bob's response on alice's session: %d, want 404", code)
	}
	reply(bob, ask["id"], forged)
	if _, view := h.restTask("ka", thread, id); view["status"] != "input_required" {
		t.Fatalf("after bob's responses the task is %v, want it still waiting for alice", view)
	}
	if code := reply(alice, ask["id"], `{"action":"accept","content":{"answer":"alice"}}`); code != http.StatusAccepted {
		t.Fatalf("alice's answer: %d, want 202", code)
	}
	end := stream.next(t)
	if b, _ := json.Marshal(end["result"]); end["id"] != float64(5) || !strings.Contains(string(b), `the user answered {\"answer\":\"alice\"}`) {
		t.Errorf("tasks/result: %v, want the report with alice's answer", end)
	}
}

// openResult posts tasks/result for id on the session hdr (JSON-RPC id
// rpcID), expects the door's elicitation/create on its stream and returns
// the stream and that request.
func (h *host) openResult(hdr map[string]string, id string, rpcID int) (sseReader, map[string]any) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	resp := h.streamPost(ctx, hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tasks/result","params":{"taskId":%q}}`, rpcID, id))
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		h.t.Fatalf("tasks/result of a task waiting for input: %d %s, want an SSE stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := sseReader{bufio.NewScanner(resp.Body)}
	ask := s.next(h.t)
	p, _ := ask["params"].(map[string]any)
	meta, _ := p["_meta"].(map[string]any)
	if ask["method"] != "elicitation/create" || ask["id"] == nil || p["message"] != askQuestion || fmt.Sprint(meta[spectask.RelatedTaskKey]) != fmt.Sprint(map[string]any{"taskId": id}) {
		h.t.Fatalf("first message on the tasks/result stream: %v", ask)
	}
	return s, ask
}

// TestTaskQuestionTimesOut: a client that declared elicitation but never
// answers ends its tasks/result with a clear error once the door's
// TaskInputTimeout passes, and the task keeps waiting for input.
func TestTaskQuestionTimesOut(t *testing.T) {
	rt := testtask.New(t, fmt.Sprintf(`{"mcpServers": {"reports": {"command": %q, %s}}}`, testmcp.BuildReports(t), testtask.ReportsAnswerToolset), testtask.FastConfig())
	rt.Service.Start()
	svc := spectask.New(rt.Service, nil)
	sub := task.SubmitRequest{ServerName: "reports", TaskName: "report-generation",
		Arguments:  json.RawMessage(`{"topic": "margins", "delay_ms": 0, "ask": "` + askQuestion + `"}`),
		DriverData: ordinary.DriverData("submit_report", "get_report_status", "cancel_report")}
	sub.DriverData[ordinary.RespondToolKey] = "respond_report"
	raw, err := svc.Submit(context.Background(), spectask.Rev20251125, spectask.Caller{UserID: "alice", ThreadID: "t1"}, sub, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cr struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	_ = json.Unmarshal(raw, &cr)
	id := cr.Task.TaskID
	eventually.Check(t, "the task to ask", func() (bool, string) {
		row, _ := rt.Store.Get(context.Background(), id, "alice")
		return row.Status == "input_required", string(row.Status)
	})
	h := doorHost(t, mcpserver.Options{Tasks: rt.Service, TaskInputTimeout: 300 * time.Millisecond}, asAlice)
	silent := make(chan struct{})
	t.Cleanup(func() { close(silent) })
	c := h.elicitingClient("", never{silent})
	_, err = c.TaskResult(h.ctx(), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err == nil || !strings.Contains(err.Error(), "did not answer the elicitation/create for task "+id+" within 300ms") {
		t.Errorf("tasks/result of a client that never answers: %v, want the timeout error", err)
	}
	if row, _ := rt.Store.Get(context.Background(), id, "alice"); row.Status != "input_required" || row.AnswerStatus != "" {
		t.Errorf("after the timeout the task is %s (answer %q), want it still waiting", row.Status, row.AnswerStatus)
	}
}

// never is an elicitation handler that answers only once its test ends.
type never struct{ done chan struct{} }

func (n never) Elicit(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	select {
	case <-n.done:
	case <-ctx.Done():
	}
	return nil, context.Canceled
}

// TestAntlerBehindAntler2026 puts one Antler's /mcp behind another as a
// streamable-HTTP upstream: the outer host's 2026-07-28 extension driver
// (internal/task/spectasks) parses what the inner door emits, the flat
// CreateTaskResult, the DetailedTask and its inputRequests, and answers
// with tasks/update. A 2026-07-28 client of the outer host answers the
// question with tasks/update there; the answer travels through both
// hosts' stores and drivers to the reports server, and the report that
// reflects it comes back inlined in the outer tasks/get.
func TestAntlerBehindAntler2026(t *testing.T) {
	inner := answerHost(t)
	doc := fmt.Sprintf(`{"mcpServers": {"inner": {"type": "http", "url": %q, "headers": {"Authorization": "Bearer ka"}}}}`, inner.url+"/mcp")
	rt := testtask.New(t, doc, testtask.FastConfig())
	rt.Service.Start()
	gw := testgateway.New(t, gateway.Options{Cache: rt.Cache, Auth: principal.New(twoKeys), Tasks: rt.Service})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { gw.Close(); srv.Close() })
	outer := &host{t: t, url: srv.URL}

	const tool = "inner_" + submitTool
	_, created := outer.modern("ka", "tools/call", tool, map[string]any{"name": tool,
		"arguments": map[string]any{"topic": "margins", "delay_ms": 0, "ask": askQuestion}}, true)
	id := createdID(t, created.object(t))
	if row, err := rt.Store.Get(context.Background(), id, "alice"); err != nil || row.DriverName != "mcp-tasks-2026-07-28" {
		t.Fatalf("outer row %+v (%v), want it on the extension driver", row.DriverName, err)
	}
	d := outer.waitDetail("ka", id, "input_required")
	var key string
	for k, v := range d["inputRequests"].(map[string]any) {
		key = k
		if p, _ := v.(map[string]any)["params"].(map[string]any); p["message"] != askQuestion {
			t.Errorf("the inner question as the outer host asks it: %v", v)
		}
	}
	status, r := outer.modern("ka", "tasks/update", id, map[string]any{"taskId": id,
		"inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"answer": "the board"}}}}, true)
	if status != 200 || r.Error != nil {
		t.Fatalf("outer tasks/update: %d %+v", status, r.Error)
	}
	done := outer.waitDetail("ka", id, "completed")
	if b, _ := json.Marshal(done["result"]); !strings.Contains(string(b), `the user answered {\"answer\":\"the board\"}`) {
		t.Errorf("the outer result does not reflect the answer: %s", b)
	}
}

// TestTSSDKAnswersATaskQuestion: the official TypeScript SDK client's
// experimental task stream (tasks/get polls, tasks/result once the task
// waits for input) gets the durable task's question as elicitation/create
// on the tasks/result stream, answers it, and the stream ends with the
// report that reflects the answer; REST shows the task answered.
func TestTSSDKAnswersATaskQuestion(t *testing.T) {
	h := answerHost(t)
	var run sdkRun
	runScript(t, "sdk.mjs", "@modelcontextprotocol/sdk", map[string]any{
		"url": h.url + "/mcp", "apiKey": "ka", "protocolVersion": "2025-11-25",
		"headers":     map[string]string{mcpserver.HeaderThreadID: "ts-thread"},
		"elicitation": map[string]any{"action": "accept", "content": map[string]any{"answer": "the board"}},
		"steps":       []map[string]any{{"op": "callToolTask", "name": submitTool, "arguments": map[string]any{"topic": "margins", "delay_ms": 0, "ask": askQuestion}}},
	}, &run)
	if run.ConnectError != "" || len(run.Steps) != 1 || run.Steps[0].Error != "" {
		t.Fatalf("the SDK client: %+v", run)
	}
	var msgs []struct {
		Type, TaskID, Status, Error string
		Result                      sdkResult
	}
	if err := json.Unmarshal(run.Steps[0].Result, &msgs); err != nil || len(msgs) < 2 {
		t.Fatalf("task stream %s (%v)", run.Steps[0].Result, err)
	}
	last := msgs[len(msgs)-1]
	if msgs[0].Type != "taskCreated" || last.Type != "result" || !strings.Contains(last.Result.text(), `the user answered {"answer":"the board"}`) {
		t.Errorf("task stream: %+v", msgs)
	}
	asked, _ := json.Marshal(run.Elicitations)
	if len(run.Elicitations) != 1 || run.Elicitations[0]["message"] != askQuestion || !strings.Contains(string(asked), `"taskId":"`+msgs[0].TaskID+`"`) {
		t.Errorf("elicitations the SDK client answered: %s", asked)
	}
	if _, view := h.restTask("ka", "ts-thread", msgs[0].TaskID); view["status"] != "completed" || answerStatus(view) != "delivered" {
		t.Errorf("REST: %v, want the task completed with the answer delivered", view)
	}
}
