package mcpserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/host/settings"
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
