package ordinary_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
)

// fakeCaller is a mock ToolCaller: it returns a scripted raw CallToolResult
// (or error) per tool name and records every call. The real "reports" MCP
// server is being written separately and will back integration tests later.
type fakeCaller struct {
	results map[string]string
	errs    map[string]error
	calls   []ordinary.ToolCall
}

func (f *fakeCaller) CallTool(_ context.Context, c ordinary.ToolCall) (json.RawMessage, error) {
	f.calls = append(f.calls, c)
	if err := f.errs[c.Tool]; err != nil {
		return nil, err
	}
	r, ok := f.results[c.Tool]
	if !ok {
		return nil, errors.New("fakeCaller: no result scripted for " + c.Tool)
	}
	return json.RawMessage(r), nil
}

// structured returns a CallToolResult carrying payload as structuredContent.
func structured(payload string) string {
	return `{"content":[{"type":"text","text":"ignored"}],"structuredContent":` + payload + `}`
}

func driverData() map[string]string {
	return ordinary.DriverData("submit_report", "report_status", "cancel_report")
}

func submitRequest() task.SubmitRequest {
	return task.SubmitRequest{
		UserID: "u1", ThreadID: "t1", ServerName: "reports", TaskName: "Quarterly report",
		Arguments:   json.RawMessage(`{"quarter":"Q3"}`),
		DriverData:  driverData(),
		LocalTaskID: "mcp-task-0123",
	}
}

func reference() task.Reference {
	return task.Reference{
		LocalTaskID: "mcp-task-0123", UserID: "u1", ThreadID: "t1",
		ServerName: "reports", RemoteTaskID: "r-1", DriverData: driverData(),
	}
}

func TestDriverData(t *testing.T) {
	want := map[string]string{"submit_tool": "a", "status_tool": "b", "cancel_tool": "c"}
	if got := ordinary.DriverData("a", "b", "c"); !maps.Equal(got, want) {
		t.Fatalf("DriverData = %v", got)
	}
	if ordinary.Name != "ordinary-tools" {
		t.Fatalf("Name = %q", ordinary.Name)
	}
}

func TestSubmit(t *testing.T) {
	f := &fakeCaller{results: map[string]string{
		"submit_report": structured(`{"task_id":"r-1","status":"running","eta":30}`),
	}}
	req := submitRequest()
	sub, err := ordinary.New(f).Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if sub.RemoteTaskID != "r-1" || sub.State.Status != task.StatusSubmitted {
		t.Fatalf("Submission = %+v", sub)
	}
	if !maps.Equal(sub.DriverData, driverData()) {
		t.Fatalf("DriverData = %v, want the request's, without the remote id", sub.DriverData)
	}
	sub.DriverData["x"] = "y"
	if _, ok := req.DriverData["x"]; ok {
		t.Fatal("Submission.DriverData aliases the request's")
	}
	if len(f.calls) != 1 {
		t.Fatalf("%d calls", len(f.calls))
	}
	want := ordinary.ToolCall{Server: "reports", Tool: "submit_report", Arguments: req.Arguments,
		UserID: "u1", ThreadID: "t1", RequestScopedHeaders: true}
	if c := f.calls[0]; c.Server != want.Server || c.Tool != want.Tool || string(c.Arguments) != string(want.Arguments) ||
		c.UserID != want.UserID || c.ThreadID != want.ThreadID || c.RequestScopedHeaders != want.RequestScopedHeaders {
		t.Fatalf("call = %+v, want %+v", c, want)
	}
}

func TestSubmitWithoutArguments(t *testing.T) {
	f := &fakeCaller{results: map[string]string{"submit_report": structured(`{"task_id":"r-1","status":"running"}`)}}
	req := submitRequest()
	req.Arguments = nil
	if _, err := ordinary.New(f).Submit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := string(f.calls[0].Arguments); got != `{}` {
		t.Fatalf("arguments = %s, want {}", got)
	}
}

func TestSubmitRejects(t *testing.T) {
	const prefix = "Invalid structuredContent from MCP task tool 'submit_report': "
	tests := []struct {
		name   string
		result string
		want   string
	}{
		{"text only", `{"content":[{"type":"text","text":"{\"task_id\":\"r-1\",\"status\":\"running\"}"}]}`,
			"MCP task tool 'submit_report' must return structuredContent; text content is not parsed"},
		{"null structuredContent", `{"content":[],"structuredContent":null}`,
			"MCP task tool 'submit_report' must return structuredContent; text content is not parsed"},
		{"not an object", structured(`["r-1"]`), prefix + "structuredContent must be a JSON object"},
		{"missing task_id", structured(`{"status":"running"}`), prefix + "task_id: field required"},
		{"null task_id", structured(`{"task_id":null,"status":"running"}`), prefix + "task_id: must be a string"},
		{"numeric task_id", structured(`{"task_id":7,"status":"running"}`), prefix + "task_id: must be a string"},
		{"empty task_id", structured(`{"task_id":"","status":"running"}`), prefix + "task_id: must not be empty"},
		{"blank task_id", structured(`{"task_id":"  ","status":"running"}`), "remote_task_id must not be empty"},
		{"missing status", structured(`{"task_id":"r-1"}`), prefix + "status: field required"},
		{"other status", structured(`{"task_id":"r-1","status":"completed"}`), prefix + "status: must be one of 'running', got 'completed'"},
		{"malformed result", `{"structuredContent":`, "MCP task tool 'submit_report' returned a malformed result: unexpected end of JSON input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeCaller{results: map[string]string{"submit_report": tt.result}}
			_, err := ordinary.New(f).Submit(context.Background(), submitRequest())
			if !task.IsPermanent(err) {
				t.Fatalf("error = %v, want a ProtocolError", err)
			}
			if err.Error() != tt.want {
				t.Fatalf("error = %q, want %q", err.Error(), tt.want)
			}
		})
	}
}

func TestSubmitLongRemoteIDIsLeftToTheService(t *testing.T) {
	// The service checks the length so that it can cancel the remote task.
	id := strings.Repeat("r", 256)
	f := &fakeCaller{results: map[string]string{"submit_report": structured(`{"task_id":"` + id + `","status":"running"}`)}}
	sub, err := ordinary.New(f).Submit(context.Background(), submitRequest())
	if err != nil || sub.RemoteTaskID != id {
		t.Fatalf("Submit = %v", err)
	}
}

func TestMissingDriverData(t *testing.T) {
	for _, key := range []string{"submit_tool", "status_tool", "cancel_tool"} {
		for _, value := range []string{"absent", ""} {
			t.Run(key+"/"+value, func(t *testing.T) {
				data := driverData()
				if value == "absent" {
					delete(data, key)
				} else {
					data[key] = value
				}
				want := "Task driver_data is missing required '" + key + "'"
				f := &fakeCaller{}
				d := ordinary.New(f)
				req := submitRequest()
				req.DriverData = data
				ref := reference()
				ref.DriverData = data

				_, err := d.Submit(context.Background(), req)
				if !task.IsPermanent(err) || err.Error() != want {
					t.Errorf("Submit error = %v, want %q", err, want)
				}
				var call func() error
				switch key {
				case "status_tool":
					call = func() error { _, err := d.Status(context.Background(), ref); return err }
				case "cancel_tool":
					call = func() error { _, err := d.Cancel(context.Background(), ref); return err }
				}
				if call != nil {
					if err := call(); !task.IsPermanent(err) || err.Error() != want {
						t.Errorf("error = %v, want %q", err, want)
					}
				}
				if len(f.calls) != 0 {
					t.Errorf("%d remote calls made with broken driver data", len(f.calls))
				}
			})
		}
	}
}

func TestSubmitInvalidRequest(t *testing.T) {
	f := &fakeCaller{}
	req := submitRequest()
	req.ServerName = " "
	_, err := ordinary.New(f).Submit(context.Background(), req)
	if err == nil || err.Error() != "server_name must not be empty" || len(f.calls) != 0 {
		t.Fatalf("error = %v, calls = %d", err, len(f.calls))
	}
}

func TestToolErrorsAreRetryable(t *testing.T) {
	long := strings.Repeat("é", 600)
	tests := []struct {
		name   string
		result string
		want   string
	}{
		{"first text", `{"isError":true,"content":[{"type":"text","text":"  quota exceeded  "},{"type":"text","text":"second"}]}`,
			": quota exceeded"},
		{"skips blank and non-text blocks", `{"isError":true,"content":[{"type":"image","data":"AAA","mimeType":"image/png"},{"type":"text","text":" \n "},{"type":"text","text":"busy"}]}`,
			": busy"},
		{"bounded detail", `{"isError":true,"content":[{"type":"text","text":"` + long + `"}]}`,
			": " + strings.Repeat("é", 500)},
		{"no detail", `{"isError":true,"content":[]}`, ""},
		{"odd block", `{"isError":true,"content":[{"type":"text","text":5},{"type":"text","text":"ok"}]}`, ": ok"},
		{"wins over structuredContent", `{"isError":true,"content":[{"type":"text","text":"down"}],"structuredContent":{"task_id":"r-1","status":"running"}}`,
			": down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := map[string]func(*ordinary.Driver) error{
				"submit_report": func(d *ordinary.Driver) error { _, err := d.Submit(context.Background(), submitRequest()); return err },
				"report_status": func(d *ordinary.Driver) error { _, err := d.Status(context.Background(), reference()); return err },
				"cancel_report": func(d *ordinary.Driver) error { _, err := d.Cancel(context.Background(), reference()); return err },
			}
			for tool, call := range calls {
				f := &fakeCaller{results: map[string]string{tool: tt.result}}
				err := call(ordinary.New(f))
				var ce *task.CallError
				if !errors.As(err, &ce) || !task.IsRetryable(err) || task.IsPermanent(err) {
					t.Fatalf("%s: error = %v, want a retryable CallError", tool, err)
				}
				if want := "MCP task tool '" + tool + "' returned an error" + tt.want; err.Error() != want {
					t.Fatalf("%s: error = %q, want %q", tool, err.Error(), want)
				}
			}
		})
	}
}

func TestCallerFailureIsRetryable(t *testing.T) {
	cause := errors.New("connection refused")
	f := &fakeCaller{errs: map[string]error{"report_status": cause}}
	_, err := ordinary.New(f).Status(context.Background(), reference())
	if !errors.Is(err, cause) || !task.IsRetryable(err) {
		t.Fatalf("error = %v", err)
	}
	if want := "MCP task tool 'report_status' call failed: connection refused"; err.Error() != want {
		t.Fatalf("error = %q, want %q", err.Error(), want)
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		want    task.State
	}{
		{"running with hint", `{"task_id":"r-1","status":"running","poll_after_seconds":7,"progress":0.4}`,
			task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(7.0)}},
		{"running with null optionals", `{"task_id":"r-1","status":"running","result":null,"result_artifact":null,"error":null,"error_code":null,"input_required":null,"poll_after_seconds":null}`,
			task.State{Status: task.StatusWorking}},
		{"completed with result and artifact", `{"task_id":"r-1","status":"completed","result":{"pages":12},"result_artifact":{"uri":"s3://reports/r-1.pdf","mime_type":"application/pdf","size":9}}`,
			task.State{Status: task.StatusCompleted, Result: json.RawMessage(`{"pages":12}`),
				ResultArtifact: map[string]string{"uri": "s3://reports/r-1.pdf", "mime_type": "application/pdf"}}},
		{"failed with error", `{"task_id":"r-1","status":"failed","error":"renderer crashed","error_code":"internal"}`,
			task.State{Status: task.StatusFailed, Error: "renderer crashed"}},
		{"cancelled", `{"task_id":"r-1","status":"cancelled"}`, task.State{Status: task.StatusCancelled}},
		{"input required", `{"task_id":"r-1","status":"input_required","input_required":{"question":"Which year?"}}`,
			task.State{Status: task.StatusInputRequired, InputRequired: json.RawMessage(`{"question":"Which year?"}`)}},
		{"task not found with error", `{"task_id":"r-1","status":"running","error_code":"task_not_found","error":"expired after 7 days","result":{"x":1}}`,
			task.State{Status: task.StatusFailed, Error: "expired after 7 days"}},
		{"task not found without error", `{"task_id":"r-1","status":"failed","error_code":"task_not_found"}`,
			task.State{Status: task.StatusFailed, Error: "Remote MCP task was not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeCaller{results: map[string]string{"report_status": structured(tt.payload)}}
			got, err := ordinary.New(f).Status(context.Background(), reference())
			if err != nil {
				t.Fatal(err)
			}
			assertState(t, got, tt.want)
			c := f.calls[0]
			if c.Tool != "report_status" || string(c.Arguments) != `{"task_id":"r-1"}` || c.Server != "reports" ||
				c.UserID != "u1" || c.ThreadID != "t1" || c.RequestScopedHeaders {
				t.Fatalf("call = %+v", c)
			}
		})
	}
}

func TestStatusInputRequiredStaysPollable(t *testing.T) {
	f := &fakeCaller{results: map[string]string{"report_status": structured(`{"task_id":"r-1","status":"input_required","input_required":{"q":"?"}}`)}}
	got, err := ordinary.New(f).Status(context.Background(), reference())
	if err != nil || !got.IsPollable() || !got.NeedsAttention() {
		t.Fatalf("snapshot = %+v, %v", got, err)
	}
}

func TestStatusRejects(t *testing.T) {
	const prefix = "Invalid structuredContent from MCP task tool 'report_status': "
	const hint = prefix + "poll_after_seconds: must be a finite number greater than 0"
	tests := []struct {
		name   string
		result string
		want   string
	}{
		{"poll hint zero", structured(`{"task_id":"r-1","status":"running","poll_after_seconds":0}`), hint},
		{"poll hint negative", structured(`{"task_id":"r-1","status":"running","poll_after_seconds":-1}`), hint},
		{"poll hint overflows to Inf", structured(`{"task_id":"r-1","status":"running","poll_after_seconds":1e400}`), hint},
		{"poll hint string", structured(`{"task_id":"r-1","status":"running","poll_after_seconds":"5"}`), hint},
		{"poll hint NaN", structured(`{"task_id":"r-1","status":"running","poll_after_seconds":NaN}`),
			"MCP task tool 'report_status' returned a malformed result: invalid character 'N' looking for beginning of value"},
		{"unknown status", structured(`{"task_id":"r-1","status":"paused"}`),
			prefix + "status: must be one of 'running', 'input_required', 'completed', 'failed', 'cancelled', got 'paused'"},
		{"working is not a remote status", structured(`{"task_id":"r-1","status":"working"}`),
			prefix + "status: must be one of 'running', 'input_required', 'completed', 'failed', 'cancelled', got 'working'"},
		{"mismatched task id", structured(`{"task_id":"r-2","status":"running"}`),
			"MCP task response task_id does not match the persisted remote task"},
		{"task id too long", structured(`{"task_id":"` + strings.Repeat("r", 256) + `","status":"running"}`),
			prefix + "task_id: must not exceed 255 characters"},
		{"missing task id", structured(`{"status":"running"}`), prefix + "task_id: field required"},
		{"input required without payload", structured(`{"task_id":"r-1","status":"input_required"}`),
			prefix + "input_required: field required when status is 'input_required'"},
		{"input required null payload", structured(`{"task_id":"r-1","status":"input_required","input_required":null}`),
			prefix + "input_required: field required when status is 'input_required'"},
		{"input required not an object", structured(`{"task_id":"r-1","status":"input_required","input_required":"Which year?"}`),
			prefix + "input_required: must be an object"},
		{"artifact without uri", structured(`{"task_id":"r-1","status":"completed","result_artifact":{"mime_type":"text/plain"}}`),
			prefix + "result_artifact.uri: field required"},
		{"artifact empty mime type", structured(`{"task_id":"r-1","status":"completed","result_artifact":{"uri":"u","mime_type":""}}`),
			prefix + "result_artifact.mime_type: must not be empty"},
		{"artifact not an object", structured(`{"task_id":"r-1","status":"completed","result_artifact":"s3://x"}`),
			prefix + "result_artifact: must be an object"},
		{"error not a string", structured(`{"task_id":"r-1","status":"failed","error":{"msg":"x"}}`), prefix + "error: must be a string"},
		{"error code not a string", structured(`{"task_id":"r-1","status":"failed","error_code":404}`), prefix + "error_code: must be a string"},
		{"text only", `{"content":[{"type":"text","text":"completed"}]}`,
			"MCP task tool 'report_status' must return structuredContent; text content is not parsed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeCaller{results: map[string]string{"report_status": tt.result}}
			_, err := ordinary.New(f).Status(context.Background(), reference())
			if !task.IsPermanent(err) {
				t.Fatalf("error = %v, want a ProtocolError", err)
			}
			if err.Error() != tt.want {
				t.Fatalf("error = %q\nwant       %q", err.Error(), tt.want)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		want    task.State
	}{
		{"cancelled", `{"task_id":"r-1","status":"cancelled"}`, task.State{Status: task.StatusCancelled}},
		{"already completed", `{"task_id":"r-1","status":"completed","result":"done","result_artifact":{"uri":"u","mime_type":"text/plain"}}`,
			task.State{Status: task.StatusCompleted, Result: json.RawMessage(`"done"`), ResultArtifact: map[string]string{"uri": "u", "mime_type": "text/plain"}}},
		{"already failed", `{"task_id":"r-1","status":"failed","error":"boom"}`, task.State{Status: task.StatusFailed, Error: "boom"}},
		{"status-only fields ignored", `{"task_id":"r-1","status":"cancelled","poll_after_seconds":-5,"input_required":7}`,
			task.State{Status: task.StatusCancelled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeCaller{results: map[string]string{"cancel_report": structured(tt.payload)}}
			got, err := ordinary.New(f).Cancel(context.Background(), reference())
			if err != nil {
				t.Fatal(err)
			}
			assertState(t, got, tt.want)
			c := f.calls[0]
			if c.Tool != "cancel_report" || string(c.Arguments) != `{"task_id":"r-1"}` || c.RequestScopedHeaders {
				t.Fatalf("call = %+v", c)
			}
		})
	}
}

func TestCancelRejects(t *testing.T) {
	const prefix = "Invalid structuredContent from MCP task tool 'cancel_report': "
	tests := []struct {
		name    string
		payload string
		want    string
	}{
		{"non-terminal", `{"task_id":"r-1","status":"running"}`,
			prefix + "status: must be one of 'cancelled', 'completed', 'failed', got 'running'"},
		{"mismatched task id", `{"task_id":"other","status":"cancelled"}`,
			"MCP task response task_id does not match the persisted remote task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeCaller{results: map[string]string{"cancel_report": structured(tt.payload)}}
			_, err := ordinary.New(f).Cancel(context.Background(), reference())
			if !task.IsPermanent(err) || err.Error() != tt.want {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestStatesNormalize checks the driver's answers pass the model's single
// boundary unchanged.
func TestStatesNormalize(t *testing.T) {
	f := &fakeCaller{results: map[string]string{"report_status": structured(`{"task_id":"r-1","status":"completed","result":{ "pages" : 12 }}`)}}
	s, err := ordinary.New(f).Status(context.Background(), reference())
	if err != nil {
		t.Fatal(err)
	}
	n, err := task.Normalize(s, task.DefaultConfig())
	if err != nil || string(n.Result) != `{"pages":12}` {
		t.Fatalf("Normalize = %s, %v", n.Result, err)
	}
}

func assertState(t *testing.T, got, want task.State) {
	t.Helper()
	if got.Status != want.Status || got.Error != want.Error || string(got.Result) != string(want.Result) ||
		string(got.InputRequired) != string(want.InputRequired) || !maps.Equal(got.ResultArtifact, want.ResultArtifact) ||
		(got.ResultArtifact == nil) != (want.ResultArtifact == nil) ||
		(got.PollAfterSeconds == nil) != (want.PollAfterSeconds == nil) ||
		(got.PollAfterSeconds != nil && *got.PollAfterSeconds != *want.PollAfterSeconds) {
		t.Fatalf("snapshot = %+v\nwant       %+v", got, want)
	}
}

func ptr[T any](v T) *T { return &v }

func TestAnswer(t *testing.T) {
	withRespond := reference()
	withRespond.DriverData = maps.Clone(withRespond.DriverData)
	withRespond.DriverData[ordinary.RespondToolKey] = "respond_report"
	answer := task.Answer{Action: "accept", Content: json.RawMessage(`{"audience":"board"}`), ID: "mcp-answer-1"}
	tests := []struct {
		name      string
		ref       task.Reference
		result    string
		wantArgs  string
		want      task.Status
		permanent bool
		wantErr   string
	}{
		{"accepted and resumed", withRespond, structured(`{"task_id":"r-1","status":"running"}`),
			`{"action":"accept","answer_id":"mcp-answer-1","content":{"audience":"board"},"task_id":"r-1"}`, task.StatusWorking, false, ""},
		{"refused", withRespond, structured(`{"task_id":"r-1","status":"input_required","input_required":{"q":"?"},"error_code":"answer_refused","error":"task r-1 is not waiting for input"}`),
			"", "", true, "task [remote task id] is not waiting for input"},
		{"tool error is retried", withRespond, `{"isError":true,"content":[{"type":"text","text":"busy"}]}`, "", "", false, "busy"},
		{"no respond tool", reference(), "", "", "", true, "missing required 'respond_tool'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeCaller{results: map[string]string{"respond_report": tt.result}}
			snap, err := ordinary.New(f).Answer(context.Background(), tt.ref, json.RawMessage(`{"q":"?"}`), answer)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || task.IsPermanent(err) != tt.permanent {
					t.Fatalf("Answer = %v (permanent %v), want %q permanent %v", err, task.IsPermanent(err), tt.wantErr, tt.permanent)
				}
				return
			}
			if err != nil || snap.Status != tt.want {
				t.Fatalf("Answer = %+v, %v", snap, err)
			}
			if len(f.calls) != 1 || string(f.calls[0].Arguments) != tt.wantArgs || f.calls[0].RequestScopedHeaders {
				t.Errorf("calls %+v, want one respond_report call with %s", f.calls, tt.wantArgs)
			}
		})
	}
	d := ordinary.New(&fakeCaller{})
	if d.CanAnswer(reference()) || !d.CanAnswer(withRespond) || !task.CanAnswer(d, withRespond) {
		t.Error("CanAnswer must follow the toolset's respond_tool")
	}
}
