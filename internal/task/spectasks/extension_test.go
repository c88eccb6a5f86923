package spectasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/spectasks"
)

// formatAsk is an input_required DetailedTask asking, under key "format",
// for the report's format (and, under "model", for sampling).
func formatAsk(withSampling bool) string {
	reqs := map[string]any{"format": map[string]any{"method": "elicitation/create", "params": map[string]any{
		"mode": "form", "message": "Which format?", "requestedSchema": map[string]any{"type": "object"}}}}
	if withSampling {
		reqs["model"] = map[string]any{"method": "sampling/createMessage", "params": map[string]any{"messages": []any{}, "maxTokens": 10}}
	}
	b, _ := json.Marshal(map[string]any{"resultType": "complete", "taskId": "r1", "status": "input_required", "statusMessage": "Waiting",
		"pollIntervalMs": 2000, "ttlMs": nil, "inputRequests": reqs})
	return string(b)
}

// TestExtensionInputRequired: the question is the first outstanding
// elicitation not answered yet, with the key answers go to.
func TestExtensionInputRequired(t *testing.T) {
	samplingOnly, _ := json.Marshal(map[string]any{"taskId": "r1", "status": "input_required", "inputRequests": map[string]any{
		"model": map[string]any{"method": "sampling/createMessage", "params": map[string]any{}}}})
	tests := []struct {
		name     string
		get      string
		answered map[string]string
		want     task.Status
		question string
	}{
		{name: "an elicitation", get: formatAsk(false), want: task.StatusInputRequired,
			question: `{"input_request_id":"format","message":"Which format?","method":"elicitation/create","mode":"form","requestedSchema":{"type":"object"}}`},
		{name: "the elicitation, not the sampling", get: formatAsk(true), want: task.StatusInputRequired,
			question: `{"input_request_id":"format","message":"Which format?","method":"elicitation/create","mode":"form","requestedSchema":{"type":"object"}}`},
		{name: "answered already: the server has not applied it yet", get: formatAsk(false),
			answered: map[string]string{"answered:format": "a1"}, want: task.StatusWorking},
		{name: "answered, sampling left", get: formatAsk(true), answered: map[string]string{"answered:format": "a1"}, want: task.StatusInputRequired,
			question: `{"message":"Waiting (it asks for sampling/createMessage, which Antler cannot answer)"}`},
		{name: "sampling only", get: string(samplingOnly), want: task.StatusInputRequired,
			question: `{"message":"The remote MCP task needs input. (it asks for sampling/createMessage, which Antler cannot answer)"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ref()
			for k, v := range tt.answered {
				r.DriverData[k] = v
			}
			s := &script{answers: map[string]answer{"tasks/get": {result: tt.get}}}
			got, err := spectasks.NewExtension(s, spectasks.Options{}).Status(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.want || string(got.InputRequired) != tt.question {
				t.Errorf("snapshot %s, question %s; want %s, %s", got.Status, got.InputRequired, tt.want, tt.question)
			}
			if tt.get != string(samplingOnly) && (got.PollAfterSeconds == nil || *got.PollAfterSeconds != 2) {
				t.Errorf("poll hint %v, want pollIntervalMs", got.PollAfterSeconds)
			}
		})
	}
}

// TestExtensionSubmit: the server decides per call. A task handle is the
// remote task; a plain result (isError too) is a task completed at once.
// The call declares the extension.
func TestExtensionSubmit(t *testing.T) {
	tests := []struct {
		name   string
		reply  answer
		get    string
		want   task.Status
		remote string
		result string
		errHas string
	}{
		{name: "a task handle", reply: answer{result: `{"resultType":"task","taskId":"r1","status":"working","pollIntervalMs":5000,"ttlMs":60000}`},
			want: task.StatusWorking, remote: "r1"},
		{name: "a seed in another status is read", reply: answer{result: `{"resultType":"task","taskId":"r1","status":"input_required"}`},
			get: formatAsk(false), want: task.StatusInputRequired, remote: "r1"},
		{name: "an inline result", reply: answer{result: `{"resultType":"complete","content":[{"type":"text","text":"hi"}]}`},
			want: task.StatusCompleted, remote: "inline:mcp-task-1", result: `{"content":[{"type":"text","text":"hi"}]}`},
		{name: "an inline isError result completes", reply: answer{result: `{"content":[{"type":"text","text":"bad"}],"isError":true}`},
			want: task.StatusCompleted, remote: "inline:mcp-task-1", result: `{"content":[{"type":"text","text":"bad"}],"isError":true}`},
		{name: "no task id", reply: answer{result: `{"resultType":"task","taskId":"","status":"working"}`}, errHas: "without a taskId"},
		{name: "an unknown resultType", reply: answer{result: `{"resultType":"later"}`}, errHas: `unexpected resultType "later"`},
		{name: "a JSON-RPC error", reply: answer{err: &spectasks.RPCError{Code: spectasks.CodeMissingCapability, Message: "Missing required client capability"}}, errHas: "Missing required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{answers: map[string]answer{"tools/call": tt.reply, "tasks/get": {result: tt.get}}}
			sub, err := spectasks.NewExtension(s, spectasks.Options{}).Submit(context.Background(), task.SubmitRequest{
				LocalTaskID: "mcp-task-1", UserID: "alice", ThreadID: "t1", ServerName: "srv", TaskName: "research",
				Arguments: json.RawMessage(`{"topic":"x"}`), DriverData: spectasks.DriverData("research", 0),
			})
			c := s.calls[0]
			caps, _ := json.Marshal(c.Meta)
			if c.Method != "tools/call" || c.Tool != "research" || c.Task != nil || !c.RequestScoped ||
				string(caps) != `{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}` {
				t.Errorf("call %+v (meta %s): want research declaring the extension, no params.task", c, caps)
			}
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sub.RemoteTaskID != tt.remote || sub.State.Status != tt.want || string(sub.State.Result) != tt.result || sub.DriverData[spectasks.ToolKey] != "research" {
				t.Errorf("submission %+v (result %s), want %s %s", sub, sub.State.Result, tt.remote, tt.want)
			}
		})
	}
}

// TestExtensionCancel: tasks/cancel is an acknowledgement; the task is read
// until the server ends it.
func TestExtensionCancel(t *testing.T) {
	cancelled := `{"taskId":"r1","status":"cancelled","statusMessage":"Cancelled by request"}`
	tests := []struct {
		name      string
		answers   map[string]answer
		want      task.State
		permanent bool
		retryable bool
	}{
		{name: "acknowledged and cancelled", answers: map[string]answer{"tasks/cancel": {result: `{"resultType":"complete"}`}, "tasks/get": {result: cancelled}},
			want: task.State{Status: task.StatusCancelled, Error: "Cancelled by request"}},
		{name: "acknowledged, it completed first", answers: map[string]answer{"tasks/cancel": {result: `{}`},
			"tasks/get": {result: `{"taskId":"r1","status":"completed","result":{"content":[]}}`}},
			want: task.State{Status: task.StatusCompleted, Result: json.RawMessage(`{"content":[]}`)}},
		{name: "acknowledged, still working", answers: map[string]answer{"tasks/cancel": {result: `{}`}, "tasks/get": {result: `{"taskId":"r1","status":"working"}`}},
			retryable: true},
		{name: "unknown task", answers: map[string]answer{"tasks/cancel": {err: &spectasks.RPCError{Code: -32602, Message: "Task not found"}},
			"tasks/get": {err: &spectasks.RPCError{Code: -32602, Message: "Task not found"}}}, permanent: true},
		{name: "refused in transport", answers: map[string]answer{"tasks/cancel": {err: errors.New("timeout")}}, retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{answers: tt.answers}
			got, err := spectasks.NewExtension(s, spectasks.Options{}).Cancel(context.Background(), ref())
			checkErr(t, err, tt.permanent, tt.retryable, "")
			if err == nil {
				checkState(t, got, tt.want)
			}
		})
	}
}

// TestExtensionAnswer: tasks/update carries the answer under the question's
// input request key; an answer driver data records is not sent again.
func TestExtensionAnswer(t *testing.T) {
	question := json.RawMessage(`{"input_request_id":"format","message":"Which format?"}`)
	accepted := task.Answer{Action: "accept", Content: json.RawMessage(`{"format":"pdf"}`), ID: "a1"}
	working := `{"taskId":"r1","status":"working"}`
	sentAccept := `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"inputResponses":{"format":{"action":"accept","content":{"format":"pdf"}}},"taskId":"r1"}`
	tests := []struct {
		name      string
		question  json.RawMessage
		answer    task.Answer
		answered  string // driver data's answer id for "format"
		update    answer
		wantSent  string // the update's params ("" none sent)
		permanent bool
		errIs     error
		errHas    string
	}{
		{name: "accept", question: question, answer: accepted, update: answer{result: `{}`}, wantSent: sentAccept},
		{name: "decline", question: question, answer: task.Answer{Action: "decline", ID: "a2"}, update: answer{result: `{}`},
			wantSent: `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"inputResponses":{"format":{"action":"decline"}},"taskId":"r1"}`},
		{name: "delivered before", question: question, answer: accepted, answered: "a1"},
		{name: "another answer to an answered request", question: question, answer: task.Answer{Action: "accept", ID: "a9"}, answered: "a1", errIs: spectasks.ErrUnanswerable},
		{name: "a question without an input request", question: json.RawMessage(`{"message":"sampling"}`), answer: accepted, errIs: spectasks.ErrUnanswerable},
		{name: "a bad action", question: question, answer: task.Answer{Action: "maybe"}, errHas: "accept, decline or cancel"},
		{name: "unknown task", question: question, answer: accepted, update: answer{err: &spectasks.RPCError{Code: -32602, Message: "Task not found"}},
			wantSent: sentAccept, permanent: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ref()
			if tt.answered != "" {
				r.DriverData["answered:format"] = tt.answered
			}
			s := &script{answers: map[string]answer{"tasks/update": tt.update, "tasks/get": {result: working}}}
			got, err := spectasks.NewExtension(s, spectasks.Options{}).Answer(context.Background(), r, tt.question, tt.answer)
			var sent string
			for _, c := range s.calls {
				if c.Method == "tasks/update" {
					sent = string(c.Params)
				}
			}
			if sent != tt.wantSent {
				t.Errorf("update sent %s, want %s", sent, tt.wantSent)
			}
			switch {
			case tt.permanent:
				if !task.IsPermanent(err) {
					t.Fatalf("err = %v, want permanent", err)
				}
				return
			case tt.errIs != nil || tt.errHas != "":
				if err == nil || tt.errIs != nil && !errors.Is(err, tt.errIs) || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want %v %q", err, tt.errIs, tt.errHas)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if got.Status != task.StatusWorking || got.DriverData["answered:format"] != tt.answer.ID || got.DriverData[spectasks.ToolKey] != "research" {
				t.Errorf("snapshot %+v, want working with the answer recorded beside the driver data", got)
			}
		})
	}
}
