package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/sdk/sdktest"
)

// jobs answers the driver's calls as the jobs server would for one job in
// the given state, recording the tools called.
func jobs(state int, called *[]string) sdktest.CallToolFunc {
	return func(req *abi.CallToolRequest) abi.CallToolResponse {
		*called = append(*called, req.Tool)
		var sc any
		switch req.Tool {
		case "enqueue":
			sc = map[string]any{"job": 7}
		case "job_state", "abort_job":
			sc = map[string]any{"job": 7, "state": state, "reason": "boom"}
		case "job_output":
			sc = map[string]any{"job": 7, "output": "processed: X"}
		case "supply_input":
			var a map[string]any
			_ = json.Unmarshal(req.Arguments, &a)
			if state == stateDone {
				sc = map[string]any{"job": 7, "state": state, "refused": "job 7 is not waiting for input"}
			} else {
				sc = map[string]any{"job": 7, "state": state, "args": a}
			}
		default:
			return abi.CallToolResponse{Error: "no such tool"}
		}
		b, _ := json.Marshal(map[string]any{"structuredContent": sc})
		return abi.CallToolResponse{Result: b}
	}
}

func TestDriverMapsTheJobAPI(t *testing.T) {
	var called []string
	sub := sdktest.Submit(t, &abi.TaskSubmitRequest{ServerName: "jobs", Arguments: []byte(`{"payload":"x"}`),
		DriverData: []byte(`{"submit_tool":"enqueue"}`)}, jobs(0, &called))
	if sub.Error != "" || sub.RemoteTaskID != "7" {
		t.Fatalf("submit = %+v", sub)
	}
	tests := []struct {
		state      int
		op, status string
		tools      string
	}{
		{stateQueued, "status", abi.StatusSubmitted, "[job_state]"},
		{stateRunning, "status", abi.StatusWorking, "[job_state]"},
		{stateDone, "status", abi.StatusCompleted, "[job_state job_output]"},
		{stateFailed, "status", abi.StatusFailed, "[job_state]"},
		{stateAborted, "status", abi.StatusCancelled, "[job_state]"},
		{stateAborted, "cancel", abi.StatusCancelled, "[abort_job]"},
		{stateDone, "cancel", abi.StatusCompleted, "[abort_job job_output]"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.op, tt.state), func(t *testing.T) {
			var called []string
			ref := &abi.TaskReference{ServerName: "jobs", RemoteTaskID: "7", DriverData: []byte(`{}`)}
			run := sdktest.Status
			if tt.op == "cancel" {
				run = sdktest.Cancel
			}
			resp := run(t, ref, jobs(tt.state, &called))
			if resp.Snapshot == nil || resp.Snapshot.Status != tt.status {
				t.Fatalf("answer = %+v, want %s", resp, tt.status)
			}
			if got := fmt.Sprint(called); got != tt.tools {
				t.Errorf("tools called = %s, want %s", got, tt.tools)
			}
		})
	}
}

func TestDriverRetriesAFailedCall(t *testing.T) {
	resp := sdktest.Status(t, &abi.TaskReference{ServerName: "jobs", RemoteTaskID: "7"}, func(*abi.CallToolRequest) abi.CallToolResponse {
		return abi.CallToolResponse{Error: "upstream down"}
	})
	if resp.Error == "" || !resp.Retryable {
		t.Errorf("answer = %+v, want a retryable error", resp)
	}
}

// TestDriverAnswers maps a waiting job to input_required with its prompt,
// and each answer action to supply_input's verdict, with the answer's id as
// the token; a job that is not waiting refuses the answer for good.
func TestDriverAnswers(t *testing.T) {
	var called []string
	ref := abi.TaskReference{ServerName: "jobs", RemoteTaskID: "7", DriverData: []byte(`{}`)}
	waiting := sdktest.Status(t, &ref, func(req *abi.CallToolRequest) abi.CallToolResponse {
		b, _ := json.Marshal(map[string]any{"structuredContent": map[string]any{"job": 7, "state": stateWaiting, "prompt": "Which colour?"}})
		return abi.CallToolResponse{Result: b}
	})
	if waiting.Snapshot == nil || waiting.Snapshot.Status != abi.StatusInputRequired ||
		!strings.Contains(string(waiting.Snapshot.InputRequired), `"message":"Which colour?"`) {
		t.Fatalf("waiting job = %+v", waiting)
	}
	tests := []struct {
		action, content string
		after           int
		status, args    string
	}{
		{abi.AnswerAccept, `{"value":"blue"}`, stateRunning, abi.StatusWorking, `map[job:7 token:ans-1 value:blue verdict:1]`},
		{abi.AnswerDecline, ``, stateRunning, abi.StatusWorking, `map[job:7 token:ans-1 verdict:2]`},
		{abi.AnswerCancel, ``, stateAborted, abi.StatusCancelled, `map[job:7 token:ans-1 verdict:3]`},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			var args any
			req := &abi.TaskAnswerRequest{Task: ref, Question: waiting.Snapshot.InputRequired, Action: tt.action, AnswerID: "ans-1"}
			if tt.content != "" {
				req.Content = []byte(tt.content)
			}
			resp := sdktest.Answer(t, req, func(req *abi.CallToolRequest) abi.CallToolResponse {
				var a map[string]any
				_ = json.Unmarshal(req.Arguments, &a)
				args = a
				return jobs(tt.after, &called)(req)
			})
			if resp.Snapshot == nil || resp.Snapshot.Status != tt.status || fmt.Sprint(args) != tt.args {
				t.Errorf("answer = %+v with arguments %v, want %s with %s", resp, args, tt.status, tt.args)
			}
		})
	}
	refused := sdktest.Answer(t, &abi.TaskAnswerRequest{Task: ref, Action: abi.AnswerAccept, Content: []byte(`{"value":"x"}`), AnswerID: "a"}, jobs(stateDone, &called))
	if refused.Error == "" || refused.Retryable {
		t.Errorf("answer to a job not waiting = %+v, want a permanent error", refused)
	}
	empty := sdktest.Answer(t, &abi.TaskAnswerRequest{Task: ref, Action: abi.AnswerAccept, Content: []byte(`{}`), AnswerID: "a"}, jobs(stateRunning, &called))
	if empty.Error == "" || empty.Retryable {
		t.Errorf("accept without a value = %+v, want a permanent error", empty)
	}
}
