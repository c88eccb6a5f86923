package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/mcpserver"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/spectask"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// TestTaskMethodsWithoutParams: a tasks/* request that carries no params
// at all (the TS SDK's listTasks sends none) is Antler's, as one with {}
// is: tasks/list lists the session's task (mcp-go's own answer would be an
// empty list or -32601), tasks/get is invalid params.
func TestTaskMethodsWithoutParams(t *testing.T) {
	h := newTaskHost(t, "", settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent})
	c := h.client("2025-11-25", "ka")
	id := taskOf(t, rawCall(t, c, "tools/call", map[string]any{"name": submitTool, "arguments": map[string]any{"topic": "q1", "delay_ms": 60000}, "task": map[string]any{}}).object(t))["taskId"]
	list := paramless(t, c, "tasks/list")
	tasks, _ := list.object(t)["tasks"].([]any)
	if len(tasks) != 1 || tasks[0].(map[string]any)["taskId"] != id {
		t.Errorf("tasks/list without params: %s, want task %v", list.Result, id)
	}
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		if r := paramless(t, c, method); r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS {
			t.Errorf("%s without params: %+v %s, want -32602", method, r.Error, r.Result)
		}
	}
}

// paramless sends a request with no params member at all, as the TS SDK
// does (rawCall's nil map would be "params": null).
func paramless(t *testing.T, c *client.Client, method string) rpcReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(9001)), Method: method})
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	reply := rpcReply{Result: resp.Result}
	if resp.Error != nil {
		reply.Error = &struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}{resp.Error.Code, resp.Error.Message}
	}
	return reply
}

// TestDroppedStreamResumesWithTheResult: a 2025-11-25 call whose POST
// stream drops mid-call (after its progress) is not cancelled: the client
// resumes with GET and Last-Event-ID and is delivered the call's real
// result, not a cancellation.
func TestDroppedStreamResumesWithTheResult(t *testing.T) {
	h := newRelayHost(t)
	c, _ := h.relayClient(t, "2025-11-25", false, false)
	const tag = "resumed"
	send := func(method, body string, header map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(h.ctx(), method, h.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(server.HeaderKeySessionID, c.GetSessionId())
		req.Header.Set(mcp.HeaderProtocolVersion, "2025-11-25")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	post := send(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":"call-r","method":"tools/call","params":{"name":"up_wait","arguments":{"tag":%q},"_meta":{"progressToken":%q}}}`, tag, tag),
		map[string]string{"Content-Type": "application/json"})
	stop, cancel := context.WithCancel(h.ctx())
	defer cancel()
	events := sseEvents(stop, post.Body)
	var last string
	for ev := range events {
		if ev.id != "" {
			last = ev.id
		}
		if strings.Contains(ev.data, string(mcp.MethodNotificationProgress)) {
			break
		}
	}
	if last == "" {
		t.Fatal("the POST stream carried no progress event with an id")
	}
	cancel()
	post.Body.Close() // the connection drops mid-call
	h.ended(t, tag)

	get := send(http.MethodGet, "", map[string]string{"Last-Event-ID": last})
	defer get.Body.Close()
	if get.StatusCode != http.StatusOK {
		t.Fatalf("resume: %d", get.StatusCode)
	}
	h.release(t, tag)
	for ev := range sseEvents(h.ctx(), get.Body) {
		var msg struct {
			ID     string              `json:"id"`
			Result *mcp.CallToolResult `json:"result"`
		}
		if json.Unmarshal([]byte(ev.data), &msg) != nil || msg.ID != "call-r" {
			continue
		}
		if msg.Result == nil || msg.Result.IsError || len(msg.Result.Content) != 1 || msg.Result.Content[0].(mcp.TextContent).Text != "released "+tag {
			t.Fatalf("resumed result: %s", ev.data)
		}
		h.recorded(t, "released "+tag)
		return
	}
	t.Fatal("the resumed stream ended without the call's result")
}

// sseEvent is one server-sent event.
type sseEvent struct{ id, data string }

// sseEvents reads r's events until it ends or ctx does.
func sseEvents(ctx context.Context, r io.Reader) <-chan sseEvent {
	out := make(chan sseEvent)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.data != "" {
					select {
					case out <- ev:
					case <-ctx.Done():
						return
					}
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id:"):
				ev.id = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
			case strings.HasPrefix(line, "data:"):
				ev.data += strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			}
		}
	}()
	return out
}

// TestSessionEndCancelsItsCalls: a session's call outlives its request,
// not its session: DELETE /mcp cancels it upstream.
func TestSessionEndCancelsItsCalls(t *testing.T) {
	h := newRelayHost(t)
	c, _ := h.relayClient(t, "2025-11-25", false, false)
	const tag = "deleted"
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "up_wait", map[string]any{"tag": tag}
		_, _ = c.CallTool(h.ctx(), req)
	}()
	h.recorded(t, "started "+tag)
	endSession(t, h.url, "", c)
	h.recorded(t, "cancelled "+tag)
}

// TestTaskStatusNotificationsNameTheirTask: a 2025-11-25
// notifications/tasks/status carries the related-task _meta naming its task.
func TestTaskStatusNotificationsNameTheirTask(t *testing.T) {
	h := newTaskHost(t, "", settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent})
	c := h.client("2025-11-25", "ka", transport.WithContinuousListening())
	got := make(chan mcp.JSONRPCNotification, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/tasks/status" {
			select {
			case got <- n:
			default:
			}
		}
	})
	id := taskOf(t, rawCall(t, c, "tools/call", map[string]any{"name": submitTool, "arguments": map[string]any{"topic": "q1", "delay_ms": 200}, "task": map[string]any{}}).object(t))["taskId"]
	select {
	case n := <-got:
		if n.Params.AdditionalFields["taskId"] != id {
			t.Fatalf("status of %v, want %v", n.Params.AdditionalFields["taskId"], id)
		}
		related, _ := n.Params.Meta[spectask.RelatedTaskKey].(map[string]any)
		if related["taskId"] != id {
			t.Errorf("_meta %v, want %s naming %v", n.Params.Meta, spectask.RelatedTaskKey, id)
		}
	case <-h.ctx().Done():
		t.Fatal("no notifications/tasks/status")
	}
}

// TestToolsListIsPaged: tools/list comes in pages of Options.ToolPageSize
// (one page at the default), the pages together are the whole list, and a
// cursor the door did not issue is "invalid cursor", no decoder's text.
func TestToolsListIsPaged(t *testing.T) {
	h := newHost(t)
	whole := h.client("2025-11-25", "")
	all, err := whole.ListToolsByPage(h.ctx(), mcp.ListToolsRequest{})
	if err != nil || all.NextCursor != "" || len(all.Tools) < 3 {
		t.Fatalf("default page: %d tools, cursor %q, %v", len(all.Tools), all.NextCursor, err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: h.cfgPath, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	door := mcpserver.New(mcpserver.Options{Cache: cache, Version: "test", ToolPageSize: 2, WatchInterval: -1})
	t.Cleanup(door.Close)
	streamable := door.Streamable()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streamable.ServeHTTP(w, r.WithContext(principal.NewContext(r.Context(), principal.Default)))
	}))
	t.Cleanup(srv.Close)
	paged := &host{t: t, url: srv.URL}
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("revision "+version, func(t *testing.T) {
			c := paged.client(version, "")
			var names []string
			cursor := mcp.Cursor("")
			for pages := 0; ; pages++ {
				req := mcp.ListToolsRequest{}
				req.Params.Cursor = cursor
				page, err := c.ListToolsByPage(h.ctx(), req)
				if err != nil {
					t.Fatalf("page %d: %v", pages, err)
				}
				if len(page.Tools) > 2 || pages > len(all.Tools) {
					t.Fatalf("page %d: %d tools", pages, len(page.Tools))
				}
				for _, tl := range page.Tools {
					names = append(names, tl.Name)
				}
				if cursor = page.NextCursor; cursor == "" {
					break
				}
			}
			var want []string
			for _, tl := range all.Tools {
				want = append(want, tl.Name)
			}
			if strings.Join(names, ",") != strings.Join(want, ",") {
				t.Errorf("paged %q, want %q", names, want)
			}
			req := mcp.ListToolsRequest{}
			req.Params.Cursor = "!not base64"
			if _, err := c.ListToolsByPage(h.ctx(), req); err == nil || !strings.Contains(err.Error(), "invalid cursor") || strings.Contains(err.Error(), "base64") {
				t.Errorf("a forged cursor: %v, want invalid cursor", err)
			}
		})
	}
}

// TestNoListChangedOnTheFirstSync: the door's first tool set is no change:
// a client that initializes and lists hears no tools/list_changed.
func TestNoListChangedOnTheFirstSync(t *testing.T) {
	h := newHost(t)
	c := h.client("2025-11-25", "")
	n := &notes{}
	c.OnNotification(n.add)
	if _, err := c.ListToolsByPage(h.ctx(), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	// A notification sent at the sync precedes the list on its stream.
	if got := n.of(string(mcp.MethodNotificationToolsListChanged)); len(got) != 0 {
		t.Errorf("%d tools/list_changed on the first list", len(got))
	}
}

// TestTaskErrorsSpeakToTheClient (2025-11-25): a task-augmented call of a
// tool without task support is -32601, and a task error names no Go
// package.
func TestTaskErrorsSpeakToTheClient(t *testing.T) {
	h := newTaskHost(t, "", settings.Key{Key: "ka", User: "alice", Role: settings.RoleAgent})
	c := h.client("2025-11-25", "ka")
	tools, err := c.ListToolsByPage(h.ctx(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	plain := ""
	for _, tl := range tools.Tools {
		if tl.Execution == nil || tl.Execution.TaskSupport == "" || tl.Execution.TaskSupport == mcp.TaskSupportForbidden {
			plain = tl.Name
		}
	}
	if plain == "" {
		t.Fatalf("no tool without task support in %d", len(tools.Tools))
	}
	if r := rawCall(t, c, "tools/call", map[string]any{"name": plain, "arguments": map[string]any{}, "task": map[string]any{}}); r.Error == nil || r.Error.Code != mcp.METHOD_NOT_FOUND {
		t.Errorf("task-augmented %s: %+v %s, want -32601", plain, r.Error, r.Result)
	}
	r := rawCall(t, c, "tasks/list", map[string]any{"cursor": "bogus"})
	if r.Error == nil || r.Error.Code != mcp.INVALID_PARAMS || strings.Contains(r.Error.Message, "spectask") {
		t.Errorf("tasks/list with a bad cursor: %+v, want -32602 without a package prefix", r.Error)
	}
}
