package main

import (
	"encoding/json"
	"fmt"
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
