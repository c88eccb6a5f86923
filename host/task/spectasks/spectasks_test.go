package spectasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/task"
	"github.com/antler-mcp/antler/host/task/spectasks"
)

// script answers each method with a fixed reply or error and records the
// calls. It stands in for a server only in the cases no real one here can
// produce (failed tasks, isError results, JSON-RPC errors, bad payloads).
type script struct {
	answers map[string]answer
	calls   []spectasks.Call
}

type answer struct {
	result  string
	session string
	err     error
}

func (s *script) Call(_ context.Context, c spectasks.Call) (spectasks.Reply, error) {
	s.calls = append(s.calls, c)
	a, ok := s.answers[c.Method]
	if !ok {
		return spectasks.Reply{}, fmt.Errorf("unexpected %s", c.Method)
	}
	if a.err != nil {
		return spectasks.Reply{}, a.err
	}
	return spectasks.Reply{Result: json.RawMessage(a.result), Session: a.session}, nil
}

func (s *script) methods() []string {
	var out []string
	for _, c := range s.calls {
		out = append(out, c.Method)
	}
	return out
}

func ref() task.Reference {
	return task.Reference{LocalTaskID: "mcp-task-1", UserID: "alice", ThreadID: "t1", ServerName: "srv", RemoteTaskID: "r1",
		DriverData: map[string]string{spectasks.ToolKey: "research", spectasks.SessionKey: "s1"}}
}

func getTask(status, msg string, poll any) string {
	b, _ := json.Marshal(map[string]any{"taskId": "r1", "status": status, "statusMessage": msg, "pollInterval": poll,
		"createdAt": "2025-11-25T00:00:00Z", "lastUpdatedAt": "2025-11-25T00:00:00Z", "ttl": 60000})
	return string(b)
}

func seconds(v float64) *float64 { return &v }

// TestStatusMapping is the 2025-11-25 mapping: each remote status, the
// result tasks/result returns for a terminal one, and the errors.
func TestStatusMapping(t *testing.T) {
	report := `{"content":[{"type":"text","text":"report"}],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"r1"}}}`
	tests := []struct {
		name      string
		answers   map[string]answer
		want      task.Snapshot
		permanent bool   // a *task.ProtocolError (the task fails for good)
		retryable bool   // any other error
		errHas    string // in the error's text
		methods   []string
	}{
		{name: "working with a poll hint",
			answers: map[string]answer{"tasks/get": {result: getTask("working", "Gathering sources...", 2500)}},
			want:    task.Snapshot{Status: task.StatusWorking, PollAfterSeconds: seconds(2.5)}, methods: []string{"tasks/get"}},
		{name: "working, a hint below the floor",
			answers: map[string]answer{"tasks/get": {result: getTask("working", "", 10)}},
			want:    task.Snapshot{Status: task.StatusWorking, PollAfterSeconds: seconds(1)}, methods: []string{"tasks/get"}},
		{name: "working, a hint above the ceiling",
			answers: map[string]answer{"tasks/get": {result: getTask("working", "", 86400000)}},
			want:    task.Snapshot{Status: task.StatusWorking, PollAfterSeconds: seconds(300)}, methods: []string{"tasks/get"}},
		{name: "working without a hint",
			answers: map[string]answer{"tasks/get": {result: getTask("working", "", nil)}},
			want:    task.Snapshot{Status: task.StatusWorking}, methods: []string{"tasks/get"}},
		{name: "input_required carries the status message",
			answers: map[string]answer{"tasks/get": {result: getTask("input_required", "Which python?", 1000)}},
			want:    task.Snapshot{Status: task.StatusInputRequired, InputRequired: json.RawMessage(`{"message":"Which python?"}`), PollAfterSeconds: seconds(1)},
			methods: []string{"tasks/get"}},
		{name: "completed takes the result, without the related-task _meta",
			answers: map[string]answer{"tasks/get": {result: getTask("completed", "", nil)}, "tasks/result": {result: report}},
			want:    task.Snapshot{Status: task.StatusCompleted, Result: json.RawMessage(`{"content":[{"type":"text","text":"report"}]}`)},
			methods: []string{"tasks/get", "tasks/result"}},
		{name: "completed with an isError result fails",
			answers: map[string]answer{"tasks/get": {result: getTask("completed", "", nil)},
				"tasks/result": {result: `{"content":[{"type":"text","text":"quota exceeded"}],"isError":true}`}},
			want:    task.Snapshot{Status: task.StatusFailed, Error: "MCP tool 'research' returned an error: quota exceeded"},
			methods: []string{"tasks/get", "tasks/result"}},
		{name: "failed with the tool's error text",
			answers: map[string]answer{"tasks/get": {result: getTask("failed", "boom", nil)},
				"tasks/result": {result: `{"content":[{"type":"text","text":"disk full"}],"isError":true}`}},
			want:    task.Snapshot{Status: task.StatusFailed, Error: "MCP tool 'research' returned an error: disk full"},
			methods: []string{"tasks/get", "tasks/result"}},
		{name: "failed, no text: the status message",
			answers: map[string]answer{"tasks/get": {result: getTask("failed", "worker crashed", nil)},
				"tasks/result": {result: `{"content":[],"isError":true}`}},
			want: task.Snapshot{Status: task.StatusFailed, Error: "MCP tool 'research' returned an error: worker crashed"}},
		{name: "failed with the call's JSON-RPC error",
			answers: map[string]answer{"tasks/get": {result: getTask("failed", "", nil)},
				"tasks/result": {err: &spectasks.RPCError{Code: -32602, Message: "topic is required"}}},
			want: task.Snapshot{Status: task.StatusFailed, Error: "MCP tool 'research' failed: topic is required"}},
		{name: "cancelled",
			answers: map[string]answer{"tasks/get": {result: getTask("cancelled", "", nil)}},
			want:    task.Snapshot{Status: task.StatusCancelled}, methods: []string{"tasks/get"}},
		{name: "unknown task (-32602) fails for good",
			answers:   map[string]answer{"tasks/get": {err: &spectasks.RPCError{Code: -32602, Message: "Task not found"}}},
			permanent: true, errHas: "Task not found"},
		{name: "an internal error (-32603) is retried",
			answers:   map[string]answer{"tasks/get": {err: &spectasks.RPCError{Code: -32603, Message: "db down"}}},
			retryable: true, errHas: "db down"},
		{name: "a transport failure is retried",
			answers:   map[string]answer{"tasks/get": {err: errors.New("connection refused")}},
			retryable: true, errHas: "connection refused"},
		{name: "a forgotten session fails for good",
			answers:   map[string]answer{"tasks/get": {err: fmt.Errorf("404: %w", spectasks.ErrSessionGone)}},
			permanent: true, errHas: "Remote MCP task was lost"},
		{name: "tasks/result failing in transport is retried",
			answers:   map[string]answer{"tasks/get": {result: getTask("completed", "", nil)}, "tasks/result": {err: errors.New("reset")}},
			retryable: true},
		{name: "another task's id",
			answers:   map[string]answer{"tasks/get": {result: `{"taskId":"r2","status":"working"}`}},
			permanent: true, errHas: "does not match"},
		{name: "an unknown status",
			answers:   map[string]answer{"tasks/get": {result: getTask("paused", "", nil)}},
			permanent: true, errHas: `unknown status "paused"`},
		{name: "a malformed task",
			answers:   map[string]answer{"tasks/get": {result: `[1]`}},
			permanent: true, errHas: "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{answers: tt.answers}
			d := spectasks.New(s, spectasks.Options{MinPollInterval: time.Second, MaxPollInterval: 300 * time.Second})
			got, err := d.Status(context.Background(), ref())
			checkErr(t, err, tt.permanent, tt.retryable, tt.errHas)
			if err == nil {
				checkSnapshot(t, got, tt.want)
			}
			if tt.methods != nil && strings.Join(s.methods(), ",") != strings.Join(tt.methods, ",") {
				t.Errorf("methods = %v, want %v", s.methods(), tt.methods)
			}
			for _, c := range s.calls {
				if c.Session != "s1" || c.UserID != "alice" || c.ThreadID != "t1" || c.RequestScoped || string(c.Params) != `{"taskId":"r1"}` {
					t.Errorf("call %+v: want the task's session, owner and {taskId}, not request-scoped", c)
				}
			}
		})
	}
}

// TestCancelMapping: tasks/cancel's Task, a task that was terminal before
// (-32602, then tasks/get), and a server that keeps running it.
func TestCancelMapping(t *testing.T) {
	tests := []struct {
		name      string
		answers   map[string]answer
		want      task.Snapshot
		retryable bool
		methods   []string
	}{
		{name: "cancelled",
			answers: map[string]answer{"tasks/cancel": {result: getTask("cancelled", "Cancelled by request", nil)}},
			want:    task.Snapshot{Status: task.StatusCancelled, Error: "Cancelled by request"}, methods: []string{"tasks/cancel"}},
		{name: "already completed",
			answers: map[string]answer{"tasks/cancel": {err: &spectasks.RPCError{Code: -32602, Message: "task is terminal"}},
				"tasks/get": {result: getTask("completed", "", nil)}, "tasks/result": {result: `{"content":[{"type":"text","text":"done"}]}`}},
			want:    task.Snapshot{Status: task.StatusCompleted, Result: json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`)},
			methods: []string{"tasks/cancel", "tasks/get", "tasks/result"}},
		{name: "still working after the request",
			answers:   map[string]answer{"tasks/cancel": {result: getTask("working", "", nil)}},
			retryable: true},
		{name: "refused in transport",
			answers:   map[string]answer{"tasks/cancel": {err: errors.New("timeout")}},
			retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{answers: tt.answers}
			got, err := spectasks.New(s, spectasks.Options{}).Cancel(context.Background(), ref())
			checkErr(t, err, false, tt.retryable, "")
			if err == nil {
				checkSnapshot(t, got, tt.want)
			}
			if tt.methods != nil && strings.Join(s.methods(), ",") != strings.Join(tt.methods, ",") {
				t.Errorf("methods = %v, want %v", s.methods(), tt.methods)
			}
		})
	}
}

// TestSubmit: params.task carries the configured ttl (or nothing), the
// session the call went on is kept, and a server that answers without a
// task fails the submit.
func TestSubmit(t *testing.T) {
	created := `{"task":{"taskId":"r1","status":"working","pollInterval":1000,"ttl":300000}}`
	tests := []struct {
		name     string
		ttl      time.Duration
		reply    answer
		wantTask string
		session  string
		errHas   string
	}{
		{name: "server default ttl", reply: answer{result: created, session: "s1"}, wantTask: `{}`, session: "s1"},
		{name: "configured ttl", ttl: 90 * time.Second, reply: answer{result: created}, wantTask: `{"ttl":90000}`},
		{name: "a plain result", reply: answer{result: `{"content":[{"type":"text","text":"hi"}]}`}, wantTask: `{}`, errHas: "without a task"},
		{name: "a tool error", reply: answer{result: `{"content":[{"type":"text","text":"bad topic"}],"isError":true}`}, wantTask: `{}`, errHas: "bad topic"},
		{name: "no task id", reply: answer{result: `{"task":{"taskId":" ","status":"working"}}`}, wantTask: `{}`, errHas: "without a taskId"},
		{name: "a JSON-RPC error", reply: answer{err: &spectasks.RPCError{Code: -32601, Message: "tool not found"}}, wantTask: `{}`, errHas: "tool not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &script{answers: map[string]answer{"tools/call": tt.reply}}
			sub, err := spectasks.New(s, spectasks.Options{}).Submit(context.Background(), task.SubmitRequest{
				UserID: "alice", ThreadID: "t1", ServerName: "srv", TaskName: "research",
				Arguments: json.RawMessage(`{"topic":"x"}`), Secrets: map[string]string{"k": "v"},
				DriverData: spectasks.DriverData("research", tt.ttl),
			})
			if len(s.calls) != 1 {
				t.Fatalf("calls = %v, want one tools/call", s.methods())
			}
			c := s.calls[0]
			if c.Tool != "research" || string(c.Task) != tt.wantTask || !c.RequestScoped || c.Secrets["k"] != "v" || string(c.Arguments) != `{"topic":"x"}` {
				t.Errorf("call %+v: want research with task %s, request-scoped with the secrets", c, tt.wantTask)
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
			if sub.RemoteTaskID != "r1" || sub.Snapshot.Status != task.StatusWorking || sub.DriverData[spectasks.SessionKey] != tt.session {
				t.Errorf("submission %+v, want r1 working on session %q", sub, tt.session)
			}
		})
	}
}

func checkErr(t *testing.T, err error, permanent, retryable bool, has string) {
	t.Helper()
	switch {
	case !permanent && !retryable && err != nil:
		t.Fatalf("err = %v, want none", err)
	case permanent && !task.IsPermanent(err):
		t.Fatalf("err = %v, want a permanent error", err)
	case retryable && (err == nil || !task.IsRetryable(err)):
		t.Fatalf("err = %v, want a retryable error", err)
	}
	if has != "" && (err == nil || !strings.Contains(err.Error(), has)) {
		t.Errorf("err = %v, want %q in it", err, has)
	}
}

func checkSnapshot(t *testing.T, got, want task.Snapshot) {
	t.Helper()
	if got.Status != want.Status || got.Error != want.Error || string(got.Result) != string(want.Result) || string(got.InputRequired) != string(want.InputRequired) {
		t.Errorf("snapshot = %+v (result %s, input %s), want %+v (result %s, input %s)", got, got.Result, got.InputRequired, want, want.Result, want.InputRequired)
	}
	switch {
	case (got.PollAfterSeconds == nil) != (want.PollAfterSeconds == nil):
		t.Errorf("poll hint = %v, want %v", got.PollAfterSeconds, want.PollAfterSeconds)
	case got.PollAfterSeconds != nil && *got.PollAfterSeconds != *want.PollAfterSeconds:
		t.Errorf("poll hint = %v, want %v", *got.PollAfterSeconds, *want.PollAfterSeconds)
	}
	if _, err := task.Normalize(got, task.DefaultConfig()); err != nil {
		t.Errorf("Normalize: %v", err)
	}
}
