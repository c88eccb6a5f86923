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
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
)

const submitTool = "reports_submit_report"

// newTaskHost is a real gateway with the task runtime (SQLite store,
// ordinary driver, one-second polls) over the reports server as a
// streamable-HTTP upstream; headersFromContext is the reports server's
// headers_from_context JSON ("" for none).
func newTaskHost(t *testing.T, headersFromContext string, keys ...settings.Key) *host {
	t.Helper()
	return newToolsetHost(t, testtask.ReportsToolset, headersFromContext, keys...)
}

// newToolsetHost is newTaskHost with the reports server's task_toolsets
// entry toolset.
func newToolsetHost(t *testing.T, toolset, headersFromContext string, keys ...settings.Key) *host {
	t.Helper()
	extra := ""
	if headersFromContext != "" {
		extra = `"headers_from_context": ` + headersFromContext + `,`
	}
	doc := fmt.Sprintf(`{"mcpServers": {"reports": {"type": "http", "url": %q, %s %s}}}`,
		testmcp.StartReportsHTTP(t)+"/mcp", extra, toolset)
	rt := testtask.New(t, doc, testtask.FastConfig())
	cache, svc := rt.Cache, rt.Service
	svc.Start()
	gw := testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(keys), Tasks: svc})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { gw.Close(); srv.Close() })
	return &host{t: t, url: srv.URL}
}

// rpcReply is a JSON-RPC response as the tests read it.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (r rpcReply) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if r.Error != nil || json.Unmarshal(r.Result, &m) != nil {
		t.Fatalf("want a result, got error %+v result %s", r.Error, r.Result)
	}
	return m
}

// modernMeta is the per-request _meta of a 2026-07-28 client; withTasks
// declares the tasks extension.
func modernMeta(withTasks bool) map[string]any {
	caps := map[string]any{}
	if withTasks {
		caps["extensions"] = map[string]any{mcpserver.ExtensionTasks: map[string]any{}}
	}
	return map[string]any{mcp.MetaKeyProtocolVersion: mcp.ProtocolVersion20260728, mcp.MetaKeyClientCapabilities: caps,
		mcp.MetaKeyClientInfo: map[string]any{"name": "raw", "version": "1"}}
}

// modern posts one 2026-07-28 request with its standard headers (name is
// Mcp-Name, "" for none).
func (h *host) modern(key, method, name string, params map[string]any, withTasks bool) (int, rpcReply) {
	h.t.Helper()
	params["_meta"] = modernMeta(withTasks)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	req, _ := http.NewRequest("POST", h.url+"/mcp", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, method)
	if name != "" {
		req.Header.Set(mcp.HeaderName, name)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply rpcReply
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		h.t.Fatalf("%s: %d, undecodable: %v", method, resp.StatusCode, err)
	}
	return resp.StatusCode, reply
}

// rawCall sends one request through a client's transport, as a
// task-augmented tools/call has to be (mcp-go's CallTool wants content).
func rawCall(t *testing.T, c *client.Client, method string, params map[string]any) rpcReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(9000)), Method: method, Params: params})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	var reply rpcReply
	reply.Result = resp.Result
	if resp.Error != nil {
		reply.Error = &struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}{resp.Error.Code, resp.Error.Message}
	}
	return reply
}

// taskOf is the Task of a 2025-11-25 CreateTaskResult, {task: Task}.
func taskOf(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	tk, _ := m["task"].(map[string]any)
	if id, _ := tk["taskId"].(string); !strings.HasPrefix(id, "mcp-task-") {
		t.Fatalf("no task in %v", m)
	}
	return tk
}

// createdID is the task id of a 2026-07-28 CreateTaskResult: flat, the
// Task's fields beside resultType "task".
func createdID(t *testing.T, m map[string]any) string {
	t.Helper()
	id, _ := m["taskId"].(string)
	if _, nested := m["task"]; nested || m["resultType"] != "task" || !strings.HasPrefix(id, "mcp-task-") || m["status"] == nil || m["createdAt"] == nil {
		t.Fatalf("not a flat 2026-07-28 CreateTaskResult: %v", m)
	}
	if ttl, ok := m["ttlMs"]; !ok || ttl != nil {
		t.Fatalf("CreateTaskResult ttlMs %v (present %v), want null", ttl, ok)
	}
	return id
}

// TestSpecTasks20251125 drives a 2025-11-25 session through the whole
// Tasks utility: the capability and the listed taskSupport, a
// task-augmented submit answered with a CreateTaskResult, tasks/get,
// tasks/list, tasks/result (blocking until the report is done),
// notifications/tasks/status on the session's stream, tasks/cancel (and
// -32602 for a task that already ended), the same row through the REST
// task API, and -32602 for another key.
func TestSpecTasks20251125(t *testing.T) {
	h := newTaskHost(t, "", settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent}, settings.Key{Key: "kb", User: "bob", Role: settings.RoleAgent})
	c := h.client("2025-11-25", "ka", transport.WithContinuousListening())
	var mu sync.Mutex
	statuses := map[string][]string{}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/tasks/status" {
			return
		}
		id, _ := n.Params.AdditionalFields["taskId"].(string)
		st, _ := n.Params.AdditionalFields["status"].(string)
		mu.Lock()
		statuses[id] = append(statuses[id], st)
		mu.Unlock()
	})
	caps := c.GetServerCapabilities().Tasks
	if caps == nil || caps.List == nil || caps.Cancel == nil || caps.Requests == nil || caps.Requests.Tools == nil || caps.Requests.Tools.Call == nil {
		t.Fatalf("tasks capability: %+v", caps)
	}
	res, err := c.ListTools(h.ctx(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		want := tl.Name == submitTool
		if got := tl.Execution != nil && tl.Execution.TaskSupport == mcp.TaskSupportOptional; got != want {
			t.Errorf("%s execution %+v, want taskSupport optional only on the submit tool", tl.Name, tl.Execution)
		}
	}

	created := rawCall(t, c, "tools/call", map[string]any{"name": submitTool, "arguments": map[string]any{"topic": "q3", "delay_ms": 1500}, "task": map[string]any{"ttl": 60000}})
	tk := taskOf(t, created.object(t))
	id := tk["taskId"].(string)
	if tk["status"] != "working" || tk["ttl"] != nil {
		t.Errorf("CreateTaskResult task: %v", tk)
	}
	if got, err := c.GetTask(h.ctx(), mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: id}}); err != nil || got.TaskId != id {
		t.Errorf("tasks/get: %+v %v", got, err)
	}
	list, err := c.ListTasks(h.ctx(), mcp.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 1 || list.Tasks[0].TaskId != id {
		t.Errorf("tasks/list: %+v %v", list, err)
	}
	done, err := c.TaskResult(h.ctx(), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: id}})
	if err != nil || done.IsError || len(done.Content) != 1 || !strings.Contains(done.Content[0].(mcp.TextContent).Text, "Report: q3") {
		t.Fatalf("tasks/result: %+v %v", done, err)
	}
	thread := mcpserver.SessionThread(c.GetSessionId())
	if code, body := h.rest("GET", "/api/threads/"+thread+"/mcp-tasks/"+id, "ka", ""); code != 200 || !strings.Contains(string(body), `"completed"`) {
		t.Errorf("REST sees the MCP task in the session's thread: %d %s", code, body)
	}
	if code, _ := h.rest("GET", "/api/threads/"+thread+"/mcp-tasks/"+id, "kb", ""); code != 404 {
		t.Errorf("REST with another key: %d, want 404", code)
	}
	eventually.Check(t, fmt.Sprintf("notifications/tasks/status completed for %s", id), func() (bool, string) {
		mu.Lock()
		got := strings.Join(statuses[id], ",")
		mu.Unlock()
		return strings.Contains(got, "completed"), got
	})

	long := taskOf(t, rawCall(t, c, "tools/call", map[string]any{"name": submitTool, "arguments": map[string]any{"topic": "q4", "delay_ms": 60000}, "task": map[string]any{}}).object(t))
	cancelled, err := c.CancelTask(h.ctx(), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: long["taskId"].(string)}})
	if err != nil || cancelled.Status != mcp.TaskStatusCancelled {
		t.Errorf("tasks/cancel: %+v %v", cancelled, err)
	}
	if _, err := c.CancelTask(h.ctx(), mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: id}}); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("cancelling a completed task: %v, want -32602", err)
	}

	other := h.client("2025-11-25", "kb")
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if r := rawCall(t, other, method, map[string]any{"taskId": id}); r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS {
			t.Errorf("%s with another key: %+v %s, want -32602", method, r.Error, r.Result)
		}
	}
	if l, err := other.ListTasks(h.ctx(), mcp.ListTasksRequest{}); err != nil || len(l.Tasks) != 0 {
		t.Errorf("tasks/list with another key: %+v %v", l, err)
	}
}

// TestSpecTasks20260728 drives the tasks extension: server/discover
// declares it, a submit answers resultType "task", tasks/get inlines the
// result once completed and needs Mcp-Name, tasks/cancel acks, tasks/result
// is not in this revision, subscriptions/listen with taskIds streams
// notifications/tasks, and another key gets -32602.
func TestSpecTasks20260728(t *testing.T) {
	h := newTaskHost(t, "", settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent}, settings.Key{Key: "kb", User: "bob", Role: settings.RoleAgent})
	c := h.client("", "ka")
	if ext := c.GetServerCapabilities().Extensions; ext == nil || ext[mcpserver.ExtensionTasks] == nil {
		t.Errorf("server/discover extensions: %v", ext)
	}
	code, created := h.modern("ka", "tools/call", submitTool, map[string]any{"name": submitTool, "arguments": map[string]any{"topic": "q3", "delay_ms": 1500}}, true)
	m := created.object(t)
	if code != 200 || m["resultType"] != "task" {
		t.Fatalf("submit: %d %v", code, m)
	}
	id := createdID(t, m)

	if code, r := h.modern("ka", "tasks/get", "", map[string]any{"taskId": id}, true); code != 400 || r.Error == nil || r.Error.Code != mcp.HEADER_MISMATCH {
		t.Errorf("tasks/get without Mcp-Name: %d %+v", code, r.Error)
	}
	if code, r := h.modern("ka", "tasks/result", "", map[string]any{"taskId": id}, true); code != 404 || r.Error == nil || r.Error.Code != mcp.METHOD_NOT_FOUND {
		t.Errorf("tasks/result in 2026-07-28: %d %+v, want -32601", code, r.Error)
	}
	var d map[string]any
	eventually.Check(t, "the task to complete", func() (bool, string) {
		_, r := h.modern("ka", "tasks/get", id, map[string]any{"taskId": id}, true)
		d = r.object(t)
		return d["status"] == "completed", fmt.Sprint(d)
	})
	if b, _ := json.Marshal(d["result"]); d["resultType"] != "complete" || !strings.Contains(string(b), "Report: q3") {
		t.Errorf("completed DetailedTask: %v", d)
	}
	if code, r := h.modern("kb", "tasks/get", id, map[string]any{"taskId": id}, true); code != 400 || r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS {
		t.Errorf("tasks/get with another key: %d %+v, want -32602", code, r.Error)
	}
	if code, body := h.rest("GET", "/api/threads/"+mcpserver.ModernThread+"/mcp-tasks/"+id, "ka", ""); code != 200 {
		t.Errorf("REST sees the 2026-07-28 task: %d %s", code, body)
	}

	_, long := h.modern("ka", "tools/call", submitTool, map[string]any{"name": submitTool, "arguments": map[string]any{"topic": "q4", "delay_ms": 60000}}, true)
	longID := createdID(t, long.object(t))
	_, cancelled := h.modern("ka", "tasks/cancel", longID, map[string]any{"taskId": longID}, true)
	if ack := cancelled.object(t); len(ack) != 1 || ack["resultType"] != "complete" {
		t.Errorf("tasks/cancel ack: %v", ack)
	}

	// The listener hears how the finished task ended, then the cancel.
	events := h.listenTasks(t, "ka", id, longID)
	got := map[string]string{}
	for len(got) < 2 || got[longID] != "cancelled" {
		n := events.next(t)
		if n.Method != "notifications/tasks" {
			t.Fatalf("unexpected message on the task stream: %+v", n)
		}
		got[n.Params["taskId"].(string)] = fmt.Sprint(n.Params["status"])
		if meta, _ := n.Params["_meta"].(map[string]any); meta[mcp.MetaKeySubscriptionID] == nil {
			t.Errorf("notification not tagged with its subscription: %v", n.Params)
		}
	}
	if got[id] != "completed" {
		t.Errorf("task events: %v", got)
	}

	// Without the extension the same tool is DeerFlow's: a local task id.
	_, plain := h.modern("ka", "tools/call", submitTool, map[string]any{"name": submitTool, "arguments": map[string]any{"topic": "q5", "delay_ms": 60000}}, false)
	pm := plain.object(t)
	sc, _ := pm["structuredContent"].(map[string]any)
	if tid, _ := sc["task_id"].(string); pm["resultType"] != "complete" || !strings.HasPrefix(tid, "mcp-task-") {
		t.Errorf("a call without the extension: %v", pm)
	}
}

// TestSpecTasksOnlyWhenAsked: a client speaking neither dialect (2025-06-18,
// or 2025-11-25 without params.task) sees no tasks capability or
// taskSupport and gets the local task id, as DeerFlow's agents do.
func TestSpecTasksOnlyWhenAsked(t *testing.T) {
	h := newTaskHost(t, "")
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			c := h.client(version, "")
			if caps := c.GetServerCapabilities().Tasks; version != "2025-11-25" && caps != nil {
				t.Errorf("tasks capability for %s: %+v", version, caps)
			}
			res, err := c.ListTools(h.ctx(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range res.Tools {
				if tl.Execution != nil && version != "2025-11-25" {
					t.Errorf("%s lists execution %+v", tl.Name, tl.Execution)
				}
			}
			sub := call(t, c, submitTool, map[string]any{"topic": "q3", "delay_ms": 60000}, nil)
			sc, _ := sub.StructuredContent.(map[string]any)
			if id, _ := sc["task_id"].(string); sub.IsError || !strings.HasPrefix(id, "mcp-task-") {
				t.Errorf("submit: %+v", sub)
			}
		})
	}
}

// taskStream is an open subscriptions/listen response.
type taskStream struct {
	msgs chan streamMsg
}

type streamMsg struct {
	Method string         `json:"method"`
	Params map[string]any `json:"params"`
}

// openListen posts subscriptions/listen for taskIDs with headers; the
// stream ends with ctx.
func (h *host) openListen(ctx context.Context, headers map[string]string, taskIDs ...string) *http.Response {
	h.t.Helper()
	params := map[string]any{"notifications": map[string]any{"taskIds": taskIDs}, "_meta": modernMeta(true)}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen", "params": params})
	hdr := map[string]string{mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728, mcp.HeaderMethod: "subscriptions/listen"}
	for k, v := range headers {
		hdr[k] = v
	}
	return h.streamPost(ctx, hdr, string(body))
}

// streamPost posts msg to /mcp with headers and returns the response
// unread (its body is closed at the test's end, or when ctx ends).
func (h *host) streamPost(ctx context.Context, headers map[string]string, msg string) *http.Response {
	h.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", h.url+"/mcp", strings.NewReader(msg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// listenTasks opens subscriptions/listen for taskIDs and checks the
// acknowledgement.
func (h *host) listenTasks(t *testing.T, key string, taskIDs ...string) *taskStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	resp := h.openListen(ctx, map[string]string{"Authorization": "Bearer " + key}, taskIDs...)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("subscriptions/listen: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &taskStream{msgs: make(chan streamMsg, 16)}
	go func() {
		defer close(s.msgs)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m streamMsg
				if json.Unmarshal([]byte(data), &m) == nil {
					s.msgs <- m
				}
			}
		}
	}()
	ack := s.next(t)
	ids, _ := ack.Params["notifications"].(map[string]any)["taskIds"].([]any)
	if ack.Method != mcp.MethodNotificationSubscriptionsAcknowledged || len(ids) != len(taskIDs) {
		t.Fatalf("acknowledgement: %+v", ack)
	}
	return s
}

func (s *taskStream) next(t *testing.T) streamMsg {
	t.Helper()
	select {
	case m, ok := <-s.msgs:
		if !ok {
			t.Fatal("the task stream ended")
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("nothing on the task stream for 30s")
	}
	return streamMsg{}
}

// TestTaskSubscriptionsPerPrincipalAreCapped: one caller's task
// subscriptions are capped like its sessions (429 past the cap), another
// caller is unaffected, and ending one frees its place.
func TestTaskSubscriptionsPerPrincipalAreCapped(t *testing.T) {
	rt := testtask.Open(t, testtask.Options{Config: task.DefaultConfig()})
	ts := rt.Service
	h := doorHost(t, mcpserver.Options{MaxSessionsPerPrincipal: 1, Tasks: ts}, func(r *http.Request) string { return r.Header.Get("X-User") })
	first, endFirst := context.WithCancel(context.Background())
	t.Cleanup(endFirst)
	if resp := h.openListen(first, map[string]string{"X-User": "alice"}, "mcp-task-x"); resp.StatusCode != 200 {
		t.Fatalf("alice's first subscription: %d", resp.StatusCode)
	}
	if resp := h.openListen(context.Background(), map[string]string{"X-User": "alice"}, "mcp-task-x"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("alice's second subscription: %d, want 429", resp.StatusCode)
	}
	bob, endBob := context.WithCancel(context.Background())
	defer endBob()
	if resp := h.openListen(bob, map[string]string{"X-User": "bob"}, "mcp-task-x"); resp.StatusCode != 200 {
		t.Errorf("bob's subscription: %d", resp.StatusCode)
	}
	endFirst()
	// Admitted once the server has seen the first stream end.
	eventually.Check(t, "alice's subscription after ending one", func() (bool, string) {
		again, end := context.WithCancel(context.Background())
		resp := h.openListen(again, map[string]string{"X-User": "alice"}, "mcp-task-x")
		end()
		return resp.StatusCode == 200, fmt.Sprintf("status %d", resp.StatusCode)
	})
}

// TestSpecTaskSubmitCarriesIdentity: a task submit takes its secrets from
// the same carriers as any call; a refused submit is a JSON-RPC error for
// 2025-11-25 (which asked for a task) and an error result for 2026-07-28,
// and a negative ttl is -32602.
func TestSpecTaskSubmitCarriesIdentity(t *testing.T) {
	h := newTaskHost(t, `{"headers": {"X-Report-Token": "k"}}`)
	c := h.client("2025-11-25", "")
	args := map[string]any{"topic": "q3", "delay_ms": 60000}
	if r := rawCall(t, c, "tools/call", map[string]any{"name": submitTool, "arguments": args, "task": map[string]any{}}); r.Error == nil || r.Error.Code != mcp.INTERNAL_ERROR || !strings.Contains(r.Error.Message, "credential(s) k") {
		t.Errorf("2025-11-25 submit without the secret: %+v %s, want a JSON-RPC error naming it", r.Error, r.Result)
	}
	if r := rawCall(t, c, "tools/call", map[string]any{"name": submitTool, "arguments": args, "task": map[string]any{"ttl": -1},
		"_meta": map[string]any{mcpserver.MetaSecrets: map[string]any{"k": "s3cret"}}}); r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS {
		t.Errorf("negative ttl: %+v %s, want -32602", r.Error, r.Result)
	}
	ok := rawCall(t, c, "tools/call", map[string]any{"name": submitTool, "arguments": args, "task": map[string]any{},
		"_meta": map[string]any{mcpserver.MetaSecrets: map[string]any{"k": "s3cret"}}})
	taskOf(t, ok.object(t))

	_, refused := h.modern("", "tools/call", submitTool, map[string]any{"name": submitTool, "arguments": args}, true)
	if m := refused.object(t); m["isError"] != true || m["resultType"] != "complete" {
		t.Errorf("2026-07-28 submit without the secret: %v, want an error result", m)
	}
	hc := h.client("2025-11-25", "", transport.WithHTTPHeaders(map[string]string{mcpserver.HeaderSecretPrefix + "K": "s3cret"}))
	taskOf(t, rawCall(t, hc, "tools/call", map[string]any{"name": submitTool, "arguments": args, "task": map[string]any{}}).object(t))
}

// TestTaskPollingKeepsTheSessionAlive: a 2025-11-25 session whose client
// only polls its tasks (requests the door answers, not mcp-go) is in use,
// and outlives the idle TTL, which ends an unused session opened beside it.
func TestTaskPollingKeepsTheSessionAlive(t *testing.T) {
	rt := testtask.Open(t, testtask.Options{Config: task.DefaultConfig()})
	ts := rt.Service
	h := doorHost(t, mcpserver.Options{SessionIdleTTL: 2 * time.Second, MaxSessionsPerPrincipal: 2, Tasks: ts}, asAlice)
	initialize := func() *http.Response {
		resp, _ := h.rawPost(nil, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"poll","version":"1"}}}`)
		return resp
	}
	resp := initialize()
	session := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "MCP-Protocol-Version": "2025-11-25"}
	if unused := initialize(); unused.StatusCode != 200 {
		t.Fatalf("the unused session: %d", unused.StatusCode)
	}
	// The client polls until the idle sweeper has ended the unused session:
	// with alice at her cap of two, a third session is refused (429) until
	// then, so an admitted one proves the TTL passed and the sweep ran.
	eventually.Check(t, "the unused session to idle out", func() (bool, string) {
		if resp, body := h.rawPost(session, `{"jsonrpc":"2.0","id":2,"method":"tasks/list","params":{}}`); resp.StatusCode != 200 || !strings.Contains(string(body), `"tasks":[]`) {
			t.Fatalf("tasks/list: %d %s", resp.StatusCode, body)
		}
		third := initialize()
		return third.StatusCode == 200, fmt.Sprintf("a new session: %d", third.StatusCode)
	})
	if resp, body := h.rawPost(session, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`); resp.StatusCode != 200 {
		t.Errorf("the polling session after the idle TTL: %d %s", resp.StatusCode, body)
	}
}

// TestSpecTaskOfAnUpstreamTaskTool: a tool its own server runs as a task
// (the 2026-07-28 example, through its extension driver) is listed with
// taskSupport and served as a task to a 2025-11-25 client's params.task
// call, its result taken with tasks/result once the upstream task is done.
func TestSpecTaskOfAnUpstreamTaskTool(t *testing.T) {
	doc := fmt.Sprintf(`{"mcpServers": {"jobs": {"type": "http", "url": %q}}}`,
		testmcp.StartBinaryHTTP(t, testmcp.BuildTasks2026(t), "tasks2026 server", "http")+"/mcp")
	rt := testtask.New(t, doc, testtask.FastConfig())
	rt.Service.Start()
	gw := testgateway.New(t, gateway.Options{Cache: rt.Cache, Auth: principal.New([]settings.Key{{Key: "ka", User: "alice", Role: settings.RoleAgent}}), Tasks: rt.Service})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() { gw.Close(); srv.Close() })
	h := &host{t: t, url: srv.URL}
	c := h.client("2025-11-25", "ka")
	res, err := c.ListTools(h.ctx(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, tl := range res.Tools {
		if tl.Name == "jobs_long_job" {
			listed = tl.Execution != nil && tl.Execution.TaskSupport == mcp.TaskSupportOptional
		}
	}
	if !listed {
		t.Errorf("jobs_long_job is not listed with taskSupport optional: %+v", res.Tools)
	}
	tk := taskOf(t, rawCall(t, c, "tools/call", map[string]any{"name": "jobs_long_job", "arguments": map[string]any{"topic": "doors", "poll_ms": 50}, "task": map[string]any{}}).object(t))
	done, err := c.TaskResult(h.ctx(), mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: tk["taskId"].(string)}})
	if err != nil || done.IsError || len(done.Content) != 1 || !strings.Contains(done.Content[0].(mcp.TextContent).Text, "# Report: doors") {
		t.Fatalf("tasks/result: %+v %v", done, err)
	}
	row, err := rt.Store.Get(context.Background(), tk["taskId"].(string), "alice")
	if err != nil || row.DriverName != "mcp-tasks-2026-07-28" {
		t.Errorf("row %+v %v, want it on the extension driver", row.DriverName, err)
	}
}

// doorHost serves the streamable door built from opts alone (no gateway),
// each request as the agent userOf names.
func doorHost(t *testing.T, opts mcpserver.Options, userOf func(*http.Request) string) *host {
	t.Helper()
	door := mcpserver.New(opts)
	t.Cleanup(door.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal.Principal{User: userOf(r), Role: settings.RoleAgent}
		door.Streamable().ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), p)))
	}))
	t.Cleanup(srv.Close)
	return &host{t: t, url: srv.URL}
}

func asAlice(*http.Request) string { return "alice" }
