package spectasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/spectasks"
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

// remote is what a server reports about task r1, in neither dialect's
// words: each dialect's script is built from it (see dialects).
type remote struct {
	status, msg string
	poll        any // the poll interval hint, ms (nil: none)
	// result is the call's CallToolResult once it has ended; callErr the
	// JSON-RPC error it ended with instead.
	result  string
	callErr *spectasks.RPCError
	// getErr fails the poll itself; raw replaces the task the poll answers.
	getErr error
	raw    string
}

// dialect is one spec task driver and how its server would say a remote.
type dialect struct {
	name    string
	driver  func(spectasks.Caller) task.Driver
	answers func(remote) map[string]answer
	// methods are the requests a status poll of r takes.
	methods func(remote) []string
	// params are the params a task request of r1 must carry.
	params string
}

var dialects = []dialect{
	{name: "2025-11-25",
		driver: func(c spectasks.Caller) task.Driver {
			return spectasks.New(c, spectasks.Options{MinPollInterval: time.Second, MaxPollInterval: 300 * time.Second})
		},
		answers: func(r remote) map[string]answer {
			a := map[string]answer{"tasks/get": {result: getTask(r.status, r.msg, r.poll)}}
			switch {
			case r.getErr != nil:
				a["tasks/get"] = answer{err: r.getErr}
			case r.raw != "":
				a["tasks/get"] = answer{result: r.raw}
			}
			switch {
			case r.callErr != nil:
				a["tasks/result"] = answer{err: r.callErr}
			case r.result != "":
				a["tasks/result"] = answer{result: withRelatedTask(r.result)}
			}
			return a
		},
		methods: func(r remote) []string {
			// input_required: tasks/result brings the question, if any;
			// without one the task is read again.
			if r.getErr == nil && r.raw == "" && r.status == "input_required" {
				return []string{"tasks/get", "tasks/result", "tasks/get"}
			}
			if r.getErr == nil && r.raw == "" && (r.status == "completed" || r.status == "failed") {
				return []string{"tasks/get", "tasks/result"}
			}
			return []string{"tasks/get"}
		},
		params: `{"taskId":"r1"}`,
	},
	{name: "2026-07-28",
		driver: func(c spectasks.Caller) task.Driver {
			return spectasks.NewExtension(c, spectasks.Options{MinPollInterval: time.Second, MaxPollInterval: 300 * time.Second})
		},
		answers: func(r remote) map[string]answer {
			switch {
			case r.getErr != nil:
				return map[string]answer{"tasks/get": {err: r.getErr}}
			case r.raw != "":
				return map[string]answer{"tasks/get": {result: r.raw}}
			}
			return map[string]answer{"tasks/get": {result: detailedTask(r)}}
		},
		methods: func(remote) []string { return []string{"tasks/get"} },
		params:  `{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},"taskId":"r1"}`,
	},
}

// withRelatedTask adds the related-task _meta a 2025-11-25 tasks/result
// carries.
func withRelatedTask(result string) string {
	return `{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"r1"}},` + strings.TrimPrefix(result, "{")
}

// detailedTask is r as a 2026-07-28 tasks/get answers it: the outcome
// inlined, pollIntervalMs and ttlMs.
func detailedTask(r remote) string {
	m := map[string]any{"resultType": "complete", "taskId": "r1", "status": r.status, "statusMessage": r.msg, "pollIntervalMs": r.poll,
		"createdAt": "2026-07-28T00:00:00Z", "lastUpdatedAt": "2026-07-28T00:00:00Z", "ttlMs": 60000}
	if r.result != "" {
		m["result"] = json.RawMessage(r.result)
	}
	if r.callErr != nil {
		m["error"] = map[string]any{"code": r.callErr.Code, "message": r.callErr.Message}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// TestStatusMapping is the one table of both spec dialects: each remote
// status, the outcome of an ended call, and the errors, mapped to the
// normalised model. Where the revisions disagree (an isError result) each
// has its want; cases one dialect cannot express are marked only.
func TestStatusMapping(t *testing.T) {
	report := `{"content":[{"type":"text","text":"report"}]}`
	quota := `{"content":[{"type":"text","text":"quota exceeded"}],"isError":true}`
	tests := []struct {
		name      string
		remote    remote
		want      task.State
		want2026  *task.State // the 2026-07-28 mapping, where it differs
		only      string      // the one dialect the case exists in
		permanent bool        // a *task.ProtocolError (the task fails for good)
		retryable bool        // any other error
		errHas    string      // in the error's text
	}{
		{name: "working with a poll hint", remote: remote{status: "working", msg: "Gathering sources...", poll: 2500},
			want: task.State{Status: task.StatusWorking, PollAfterSeconds: seconds(2.5)}},
		{name: "working, a hint below the floor", remote: remote{status: "working", poll: 10},
			want: task.State{Status: task.StatusWorking, PollAfterSeconds: seconds(1)}},
		{name: "working, a hint above the ceiling", remote: remote{status: "working", poll: 86400000},
			want: task.State{Status: task.StatusWorking, PollAfterSeconds: seconds(300)}},
		{name: "working without a hint", remote: remote{status: "working"},
			want: task.State{Status: task.StatusWorking}},
		{name: "input_required without an elicitation carries the status message", only: "2025-11-25", remote: remote{status: "input_required", msg: "Which python?", poll: 1000},
			want: task.State{Status: task.StatusInputRequired, InputRequired: json.RawMessage(`{"message":"Which python? (the server sent no question Antler can pass on: an answer cannot be given yet)"}`), PollAfterSeconds: seconds(1)}},
		{name: "completed takes the result, without protocol fields", remote: remote{status: "completed", result: report},
			want: task.State{Status: task.StatusCompleted, Result: json.RawMessage(report)}},
		{name: "completed with an isError result", remote: remote{status: "completed", result: quota},
			want:     task.State{Status: task.StatusFailed, Error: "MCP tool 'research' returned an error: quota exceeded"},
			want2026: &task.State{Status: task.StatusCompleted, Result: json.RawMessage(quota)}},
		{name: "failed with the tool's error text", only: "2025-11-25",
			remote: remote{status: "failed", msg: "boom", result: `{"content":[{"type":"text","text":"disk full"}],"isError":true}`},
			want:   task.State{Status: task.StatusFailed, Error: "MCP tool 'research' returned an error: disk full"}},
		{name: "failed, no text: the status message", only: "2025-11-25",
			remote: remote{status: "failed", msg: "worker crashed", result: `{"content":[],"isError":true}`},
			want:   task.State{Status: task.StatusFailed, Error: "MCP tool 'research' returned an error: worker crashed"}},
		{name: "failed with the call's JSON-RPC error", remote: remote{status: "failed", callErr: &spectasks.RPCError{Code: -32602, Message: "topic is required"}},
			want: task.State{Status: task.StatusFailed, Error: "MCP tool 'research' failed: topic is required"}},
		{name: "cancelled", remote: remote{status: "cancelled", msg: "Cancelled by request"},
			want: task.State{Status: task.StatusCancelled, Error: "Cancelled by request"}},
		{name: "completed without its result", only: "2026-07-28", remote: remote{status: "completed"},
			permanent: true, errHas: "without its result"},
		{name: "unknown task (-32602) fails for good", remote: remote{getErr: &spectasks.RPCError{Code: -32602, Message: "Task not found"}},
			permanent: true, errHas: "Task not found"},
		{name: "the remote id is cut from errors", remote: remote{getErr: &spectasks.RPCError{Code: -32602, Message: "Task r1 not found"}},
			permanent: true, errHas: "Task [remote task id] not found"},
		{name: "and from a task's error", remote: remote{status: "cancelled", msg: "r1 was cancelled"},
			want: task.State{Status: task.StatusCancelled, Error: "[remote task id] was cancelled"}},
		{name: "an internal error (-32603) is retried", remote: remote{getErr: &spectasks.RPCError{Code: -32603, Message: "db down"}},
			retryable: true, errHas: "db down"},
		{name: "a transport failure is retried", remote: remote{getErr: errors.New("connection refused")},
			retryable: true, errHas: "connection refused"},
		{name: "a forgotten session fails for good", remote: remote{getErr: fmt.Errorf("404: %w", spectasks.ErrSessionGone)},
			permanent: true, errHas: "Remote MCP task was lost"},
		{name: "tasks/result failing in transport is retried", only: "2025-11-25", remote: remote{status: "completed", callErr: nil, result: ""},
			retryable: true},
		{name: "another task's id", remote: remote{raw: `{"taskId":"r2","status":"working"}`},
			permanent: true, errHas: "does not match"},
		{name: "an unknown status", remote: remote{status: "paused"},
			permanent: true, errHas: `unknown status "paused"`},
		{name: "a malformed task", remote: remote{raw: `[1]`},
			permanent: true, errHas: "malformed"},
	}
	for _, dl := range dialects {
		for _, tt := range tests {
			if tt.only != "" && tt.only != dl.name {
				continue
			}
			t.Run(dl.name+"/"+tt.name, func(t *testing.T) {
				answers := dl.answers(tt.remote)
				if tt.name == "tasks/result failing in transport is retried" {
					answers["tasks/result"] = answer{err: errors.New("reset")}
				}
				s := &script{answers: answers}
				got, err := dl.driver(s).Status(context.Background(), ref())
				checkErr(t, err, tt.permanent, tt.retryable, tt.errHas)
				want := tt.want
				if tt.want2026 != nil && dl.name == "2026-07-28" {
					want = *tt.want2026
				}
				if err == nil {
					checkState(t, got, want)
				}
				if w := dl.methods(tt.remote); err == nil && strings.Join(s.methods(), ",") != strings.Join(w, ",") {
					t.Errorf("methods = %v, want %v", s.methods(), w)
				}
				for _, c := range s.calls {
					if c.Session != "s1" || c.UserID != "alice" || c.ThreadID != "t1" || c.RequestScoped || string(c.Params) != dl.params {
						t.Errorf("call %+v (params %s): want the task's session, owner and %s, not request-scoped", c, c.Params, dl.params)
					}
				}
			})
		}
	}
}

// TestCancelMapping: tasks/cancel's Task, a task that was terminal before
// (-32602, then tasks/get), and a server that keeps running it.
func TestCancelMapping(t *testing.T) {
	tests := []struct {
		name      string
		answers   map[string]answer
		want      task.State
		retryable bool
		methods   []string
	}{
		{name: "cancelled",
			answers: map[string]answer{"tasks/cancel": {result: getTask("cancelled", "Cancelled by request", nil)}},
			want:    task.State{Status: task.StatusCancelled, Error: "Cancelled by request"}, methods: []string{"tasks/cancel"}},
		{name: "already completed",
			answers: map[string]answer{"tasks/cancel": {err: &spectasks.RPCError{Code: -32602, Message: "task is terminal"}},
				"tasks/get": {result: getTask("completed", "", nil)}, "tasks/result": {result: `{"content":[{"type":"text","text":"done"}]}`}},
			want:    task.State{Status: task.StatusCompleted, Result: json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`)},
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
				checkState(t, got, tt.want)
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
			if sub.RemoteTaskID != "r1" || sub.State.Status != task.StatusWorking || sub.DriverData[spectasks.SessionKey] != tt.session {
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

func checkState(t *testing.T, got, want task.State) {
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
