// Command jobsdriver is a task driver plugin for the jobs example server
// (examples/mcpserver/jobs), whose job API does not match the ordinary task
// contract: its job ids and states are numbers, and a done job's result is
// fetched by a second tool. The driver translates: submit enqueues, status
// reads job_state and, once the job is done, job_output; cancel aborts. A
// job waiting for input (state 5) is input_required with its prompt as an
// elicitation question for one string, value; the user's answer goes to
// supply_input (driver_data "input_tool") with the answer's id as its token,
// so an answer delivered twice is taken once.
//
// It calls the upstream only through the host (sdk.CallTool), which scopes
// every call to the task's server, user and thread. The tool names come
// from the task toolset (driver_data submit_tool, status_tool, cancel_tool);
// the output tool is driver_data "output_tool", default job_output.
//
// The same code builds as a Wasm module and as a process plugin:
//
//	go run ./host/cmd/antler plugin build examples/plugins/jobsdriver   # jobsdriver.wasm
//	go build -o examples/plugins/jobsdriver/jobsdriver ./examples/plugins/jobsdriver
//
// Config (a task toolset of the jobs server):
//
//	{"name": "jobs", "submit_tool": "enqueue", "status_tool": "job_state",
//	 "cancel_tool": "abort_job", "driver": "wasm:./jobsdriver.wasm"}
package main

import (
	"encoding/json"
	"strconv"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/sdk"
)

// The jobs server's numeric states.
const (
	stateQueued  = 0
	stateRunning = 1
	stateDone    = 2
	stateFailed  = 3
	stateAborted = 4
	stateWaiting = 5
)

// supply_input's verdicts, by answer action.
var verdicts = map[string]int{abi.AnswerAccept: 1, abi.AnswerDecline: 2, abi.AnswerCancel: 3}

func init() { sdk.HandleTasks(driver{}) }

type driver struct{}

var _ sdk.TaskDriver = driver{}

// data reads the task's driver data (a JSON object of strings).
func data(b []byte) map[string]string {
	m := map[string]string{}
	_ = json.Unmarshal(b, &m)
	return m
}

func tool(d map[string]string, key, fallback string) string {
	if v := d[key]; v != "" {
		return v
	}
	return fallback
}

// call calls a tool of the task's server and returns its structuredContent.
// A transport failure or a tool error is retryable.
func call(server, name string, args any, submit bool) (json.RawMessage, *abi.TaskDriverResponse) {
	raw, _ := json.Marshal(args)
	resp := sdk.CallTool(&abi.CallToolRequest{Server: server, Tool: name, Arguments: raw, RequestScopedHeaders: submit})
	if resp.Error != "" {
		return nil, &abi.TaskDriverResponse{Error: name + ": " + resp.Error, Retryable: true}
	}
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil || res.IsError || len(res.StructuredContent) == 0 {
		return nil, &abi.TaskDriverResponse{Error: name + " did not answer a job", Retryable: true}
	}
	return res.StructuredContent, nil
}

func (driver) Submit(req *abi.TaskSubmitRequest) abi.TaskDriverResponse {
	d := data(req.DriverData)
	var args map[string]any
	if err := json.Unmarshal(req.Arguments, &args); err != nil {
		return abi.TaskDriverResponse{Error: "arguments must be a JSON object"}
	}
	sc, fail := call(req.ServerName, tool(d, "submit_tool", "enqueue"), args, true)
	if fail != nil {
		return *fail
	}
	var out struct {
		Job *int64 `json:"job"`
	}
	if json.Unmarshal(sc, &out) != nil || out.Job == nil {
		return abi.TaskDriverResponse{Error: "enqueue answered no job number"}
	}
	return abi.TaskDriverResponse{
		RemoteTaskID: strconv.FormatInt(*out.Job, 10),
		Snapshot:     &abi.TaskSnapshot{Status: abi.StatusSubmitted},
	}
}

func (driver) Status(ref *abi.TaskReference) abi.TaskDriverResponse {
	return poll(ref, "status_tool", "job_state")
}

func (driver) Cancel(ref *abi.TaskReference) abi.TaskDriverResponse {
	r := poll(ref, "cancel_tool", "abort_job")
	if r.Snapshot != nil && (r.Snapshot.Status == abi.StatusSubmitted || r.Snapshot.Status == abi.StatusWorking || r.Snapshot.Status == abi.StatusInputRequired) {
		r.Snapshot.Status = abi.StatusCancelled // aborted: the job stops at once
	}
	return r
}

// poll reads a job's state with the role's tool and maps it; a done job's
// output becomes the result.
func poll(ref *abi.TaskReference, role, fallback string) abi.TaskDriverResponse {
	d := data(ref.DriverData)
	job, err := strconv.ParseInt(ref.RemoteTaskID, 10, 64)
	if err != nil {
		return abi.TaskDriverResponse{Error: "the remote task id is not a job number"}
	}
	sc, fail := call(ref.ServerName, tool(d, role, fallback), map[string]any{"job": job}, false)
	if fail != nil {
		return *fail
	}
	return snapshot(ref, d, job, sc)
}

// Answer hands the user's answer to supply_input and maps the job's state
// after it. A job that is not waiting any more refuses the answer.
func (driver) Answer(req *abi.TaskAnswerRequest) abi.TaskDriverResponse {
	ref := &req.Task
	d := data(ref.DriverData)
	job, err := strconv.ParseInt(ref.RemoteTaskID, 10, 64)
	if err != nil {
		return abi.TaskDriverResponse{Error: "the remote task id is not a job number"}
	}
	verdict, ok := verdicts[req.Action]
	if !ok {
		return abi.TaskDriverResponse{Error: "unknown answer action " + req.Action}
	}
	args := map[string]any{"job": job, "token": req.AnswerID, "verdict": verdict}
	if req.Action == abi.AnswerAccept {
		var content struct {
			Value string `json:"value"`
		}
		if json.Unmarshal(req.Content, &content) != nil || content.Value == "" {
			return abi.TaskDriverResponse{Error: "the answer needs a non-empty string value"}
		}
		args["value"] = content.Value
	}
	sc, fail := call(ref.ServerName, tool(d, "input_tool", "supply_input"), args, false)
	if fail != nil {
		return *fail
	}
	var refused struct {
		Refused string `json:"refused"`
	}
	if json.Unmarshal(sc, &refused) == nil && refused.Refused != "" {
		return abi.TaskDriverResponse{Error: refused.Refused}
	}
	return snapshot(ref, d, job, sc)
}

// snapshot maps a job's state answer (job_state's, abort_job's or
// supply_input's); a done job's output becomes the result.
func snapshot(ref *abi.TaskReference, d map[string]string, job int64, sc json.RawMessage) abi.TaskDriverResponse {
	var st struct {
		Job    int64  `json:"job"`
		State  *int   `json:"state"`
		Reason string `json:"reason"`
		Prompt string `json:"prompt"`
	}
	if json.Unmarshal(sc, &st) != nil || st.State == nil || st.Job != job {
		return abi.TaskDriverResponse{Error: "the job's state answer does not match the job"}
	}
	snap := &abi.TaskSnapshot{}
	switch *st.State {
	case stateQueued:
		snap.Status = abi.StatusSubmitted
	case stateRunning:
		snap.Status = abi.StatusWorking
	case stateDone:
		out, fail := call(ref.ServerName, tool(d, "output_tool", "job_output"), map[string]any{"job": job}, false)
		if fail != nil {
			return *fail
		}
		snap.Status, snap.Result = abi.StatusCompleted, out
	case stateFailed:
		snap.Status, snap.Error = abi.StatusFailed, "the job failed: "+st.Reason
	case stateAborted:
		snap.Status = abi.StatusCancelled
	case stateWaiting:
		q, _ := json.Marshal(map[string]any{"message": st.Prompt, "requestedSchema": map[string]any{
			"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string"}}, "required": []string{"value"},
		}})
		snap.Status, snap.InputRequired = abi.StatusInputRequired, q
	default:
		return abi.TaskDriverResponse{Error: "unknown job state " + strconv.Itoa(*st.State)}
	}
	return abi.TaskDriverResponse{Snapshot: snap}
}
