package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
)

// answeredByTheDoor reports whether the gateway's log says the door itself
// answered a tools/call of tool.
func (h *relayHost) answeredByTheDoor(tool string) bool {
	return strings.Contains(h.log.String(), `msg="MCP tools/call answered by the door" tool=`+tool+"\n")
}

// TestSamplingAndRootsClientTakesTheDoorsPath: a 2025-11-25 client that
// declares sampling and roots but not elicitation (as most desktop clients
// do) has its plain calls answered by the door, and still gets what the
// upstream asks of it on its GET stream (sampling, roots), a clear refusal
// for what it did not declare (elicitation), and its notifications/cancelled
// reaches the upstream.
func TestSamplingAndRootsClientTakesTheDoorsPath(t *testing.T) {
	h := newRelayHost(t)
	c, _ := h.clientWith(t, "2025-11-25", true, client.WithSamplingHandler(answers{}), client.WithRootsHandler(answers{}))
	for _, tc := range []struct {
		name, tool, args string
		want             string // in the result's text
		wantErr          bool
	}{
		{name: "sampling stdio", tool: "ev_trigger-sampling-request", args: `{"prompt":"hello"}`, want: "sampled words"},
		{name: "sampling http", tool: "evh_trigger-sampling-request", args: `{"prompt":"hello"}`, want: "sampled words"},
		{name: "roots", tool: "up_roots", args: `{}`, want: "file:///work/ada"},
		{name: "elicitation not declared", tool: "ev_trigger-elicitation-request", args: `{}`,
			want: "the MCP client of this session does not support elicitation", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			callExpecting(t, c, tc.tool, tc.args, tc.want, tc.wantErr)
			if !h.answeredByTheDoor(tc.tool) {
				t.Errorf("the call of %s took mcp-go's path", tc.tool)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		h.cancelByNotification(t, c, "asking-client")
		if !h.answeredByTheDoor("up_wait") {
			t.Error("the call of up_wait took mcp-go's path")
		}
	})
}

// TestElicitingClientTakesMCPGosPath: a client that declared elicitation
// has its calls answered by mcp-go, which asks it on the call's own stream:
// the first and every later one (the door reads the declaration once).
func TestElicitingClientTakesMCPGosPath(t *testing.T) {
	h := newRelayHost(t)
	c, _ := h.clientWith(t, "2025-11-25", false, client.WithElicitationHandler(answers{}))
	for i := range 2 {
		res := call(t, c, "ev_trigger-elicitation-request", map[string]any{}, nil)
		if text := textOf(res); !strings.Contains(text, "Ada Lovelace") {
			t.Errorf("call %d: result %q, want the elicited answer", i+1, text)
		}
		if h.answeredByTheDoor("ev_trigger-elicitation-request") {
			t.Errorf("call %d: the door answered a call of a client that declared elicitation", i+1)
		}
	}
}

// TestSamplingSDKClientTakesTheDoorsPath: the TypeScript SDK client
// declaring sampling alone has its plain calls answered by the door: the
// upstream's sampling request reaches it on its GET stream, a log message
// streams to it before the result, and aborting the call (the SDK sends
// notifications/cancelled) cancels the upstream call.
func TestSamplingSDKClientTakesTheDoorsPath(t *testing.T) {
	h := newRelayHost(t)
	const tag = "sdk-abort"
	run := runSDK(t, map[string]any{
		"url": h.url + "/mcp", "transport": "http",
		"capabilities": map[string]any{"sampling": map[string]any{}},
		"sampling":     map[string]any{"text": "forty-two"},
		"steps": []map[string]any{
			{"op": "callTool", "name": "ev_trigger-sampling-request", "arguments": map[string]any{"prompt": "answer?"}},
			{"op": "setLevel", "level": "info"},
			{"op": "callToolAbortOnLog", "name": "up_wait", "arguments": map[string]any{"tag": tag}},
		},
	})
	if r, err := run.Steps[0].decode(); err != nil || r.IsError || !strings.Contains(r.text(), "forty-two") || len(run.Samplings) != 1 {
		t.Errorf("sampling call: %+v %v; the client was asked %v", r, err, run.Samplings)
	}
	if run.Steps[2].Error == "" {
		t.Errorf("the aborted call returned %s", run.Steps[2].Result)
	}
	h.recorded(t, "cancelled "+tag)
	for _, tool := range []string{"ev_trigger-sampling-request", "up_wait"} {
		if !h.answeredByTheDoor(tool) {
			t.Errorf("the call of %s took mcp-go's path", tool)
		}
	}
}
