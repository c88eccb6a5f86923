package spectasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/antler-mcp/antler/internal/task"
)

// Answers, 2025-11-25. A task that needs input is input_required, and the
// server sends its elicitation/create on the stream of the requestor's
// tasks/result. A poll that finds the task input_required calls
// tasks/result, holds the elicitation that arrives for the task (no
// response is sent: the request stays pending at the server) and cuts the
// tasks/result short; the question, and the held request's id, go in the
// task's driver data, so the question stays visible and answerable across
// polls, processes and host restarts. Answer responds to the held request,
// on the task's session, with the user's {action, content}, the content
// checked against the requested schema first. The server is the one to
// say how long it waits: a server that gave up on its request (the task
// moved on without the answer) makes the answer abandoned.

// Driver data keys of a held elicitation.
const (
	// HeldRequestKey is the JSON-RPC id (JSON) of the elicitation/create
	// the server waits on a response to.
	HeldRequestKey = "held_request"
	// QuestionKey is the task's question (its input_required payload).
	QuestionKey = "question"
)

// DefaultCaptureWait is Options.CaptureWait's default.
const DefaultCaptureWait = 10 * time.Second

// maxQuestionBytes bounds a held question: it is kept in the driver data,
// whose bound it must leave room in.
const maxQuestionBytes = task.MaxDriverDataBytes / 2

// methodElicit is the one server request an answer can fulfil.
const methodElicit = "elicitation/create"

// ServerRequest is a request the server sent on a Call's stream.
type ServerRequest struct {
	ID     json.RawMessage // as the server wrote it
	Method string
	Params json.RawMessage
}

// CanAnswer reports whether the task's question is a held elicitation an
// answer can go to.
func (d *Driver) CanAnswer(ref task.Reference) bool {
	return ref.DriverData[HeldRequestKey] != ""
}

// inputRequired maps an input_required Task: the question held already,
// or the one a tasks/result brings now; without one (the server sent no
// elicitation in time, or sent another request) the status message, which
// no answer can go to.
func (d *Driver) inputRequired(ctx context.Context, ref task.Reference, rt remoteTask) (task.State, error) {
	poll := d.polls.hint(rt.PollInterval)
	if q := ref.DriverData[QuestionKey]; ref.DriverData[HeldRequestKey] != "" && q != "" {
		return task.State{Status: task.StatusInputRequired, InputRequired: json.RawMessage(q), PollAfterSeconds: poll}, nil
	}
	held, err := d.hold(ctx, ref)
	if err != nil {
		return task.State{}, err
	}
	if held == nil {
		// The task may have moved on meanwhile (a server applying an
		// answer just delivered still read input_required): say what it is now.
		if now, err := d.taskRequest(ctx, ref, MethodGet); err == nil && now.Status != "input_required" {
			return d.snapshot(ctx, ref, now)
		}
		msg := orDefault(rt.StatusMessage)
		payload, _ := json.Marshal(map[string]string{"message": msg + " (the server sent no question Antler can pass on: an answer cannot be given yet)"})
		return task.State{Status: task.StatusInputRequired, InputRequired: payload, PollAfterSeconds: poll}, nil
	}
	q := questionOf(*held, rt.StatusMessage)
	data := maps.Clone(ref.DriverData)
	if data == nil {
		data = map[string]string{}
	}
	data[HeldRequestKey] = string(held.ID)
	data[QuestionKey] = string(q)
	return task.State{Status: task.StatusInputRequired, InputRequired: q, PollAfterSeconds: poll, DriverData: data}, nil
}

// hold calls tasks/result until the server's elicitation/create for the
// task arrives on its stream, holds it and ends the call; nil when none
// came within the capture wait (or the call ended first).
func (d *Driver) hold(ctx context.Context, ref task.Reference) (*ServerRequest, error) {
	cctx, cancel := context.WithTimeout(ctx, d.capture)
	defer cancel()
	var (
		mu   sync.Mutex
		held *ServerRequest
	)
	accept := func(r ServerRequest) bool {
		if r.Method != methodElicit || !aboutTask(r.Params, ref.RemoteTaskID) || len(r.Params) > maxQuestionBytes {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		if held != nil {
			return false
		}
		held = &r
		cancel() // the call has done its part
		return true
	}
	params, _ := json.Marshal(map[string]string{"taskId": ref.RemoteTaskID})
	_, err := d.caller.Call(cctx, Call{
		Server: ref.ServerName, UserID: ref.UserID, ThreadID: ref.ThreadID,
		Method: MethodResult, Params: params, Session: ref.DriverData[SessionKey], Hold: accept,
	})
	mu.Lock()
	defer mu.Unlock()
	switch {
	case held != nil:
		return held, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, ErrSessionGone):
		return nil, task.Protocolf("Remote MCP task was lost: %w", err)
	}
	return nil, nil // no question in time, or the task ended: the next poll reads it
}

// aboutTask reports whether an elicitation's params name the task in their
// related-task _meta, or name none (it came on that task's stream).
func aboutTask(params json.RawMessage, remoteID string) bool {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return false
	}
	raw, ok := p.Meta[relatedTaskKey]
	if !ok {
		return true
	}
	var rel struct {
		TaskID string `json:"taskId"`
	}
	return json.Unmarshal(raw, &rel) == nil && rel.TaskID == remoteID
}

// questionOf is a held elicitation's question: its params as the server
// wrote them, less _meta, with "method" and, when the server gave no
// message, the task's status message.
func questionOf(r ServerRequest, statusMessage string) json.RawMessage {
	q := map[string]json.RawMessage{}
	_ = json.Unmarshal(r.Params, &q)
	delete(q, "_meta")
	q["method"], _ = json.Marshal(r.Method)
	if m, ok := q["message"]; !ok || string(m) == `""` {
		q["message"], _ = json.Marshal(orDefault(statusMessage))
	}
	b, _ := json.Marshal(q)
	return b
}

// Answer responds to the task's held elicitation with a's action and
// content, on the task's session, once the content meets the requested
// schema (a *task.ProtocolError naming the field otherwise: the answer is
// refused and the question stays). The task is read first: one the server
// no longer keeps waiting (it is no longer input_required: it gave up on
// its request, or took this answer from a process that died before saying
// so) makes a *task.AbandonedError. A response sent again for a request
// the server has settled is ignored by it, so a redelivery has no effect.
func (d *Driver) Answer(ctx context.Context, ref task.Reference, question json.RawMessage, a task.Answer) (task.State, error) {
	s, err := d.answer(ctx, ref, question, a)
	var ab *task.AbandonedError
	if errors.As(err, &ab) {
		ab.State, _ = task.ScrubRemoteID(ab.State, nil, ref.RemoteTaskID)
		return task.State{}, ab
	}
	return task.ScrubRemoteID(s, err, ref.RemoteTaskID)
}

func (d *Driver) answer(ctx context.Context, ref task.Reference, question json.RawMessage, a task.Answer) (task.State, error) {
	id := ref.DriverData[HeldRequestKey]
	if id == "" {
		return task.State{}, task.Protocolf("%v: the server sent no elicitation Antler holds", ErrUnanswerable)
	}
	if q := ref.DriverData[QuestionKey]; q != "" {
		question = json.RawMessage(q)
	}
	resp := map[string]any{"action": a.Action}
	switch a.Action {
	case task.ActionAccept:
		if err := checkContent(question, a.Content); err != nil {
			return task.State{}, err
		}
		resp["content"] = a.Content
	case task.ActionDecline, task.ActionCancel:
	default:
		return task.State{}, task.Protocolf("action: must be one of '%s', '%s', '%s'", task.ActionAccept, task.ActionDecline, task.ActionCancel)
	}
	data := withoutHeld(ref.DriverData)
	rt, err := d.taskRequest(ctx, ref, MethodGet)
	if err != nil {
		return task.State{}, err
	}
	if rt.Status != "input_required" {
		after := ref
		after.DriverData = data
		s, err := d.snapshot(ctx, after, rt)
		if err != nil {
			return task.State{}, err
		}
		s.DriverData = data
		return task.State{}, &task.AbandonedError{State: s, Reason: fmt.Sprintf("the remote MCP task no longer waits for this answer: it is %s "+
			"(its server gave up on its question, for instance when it was not answered in time, or took this answer just before Antler stopped)", rt.Status)}
	}
	result, _ := json.Marshal(resp)
	if _, err := d.caller.Call(ctx, Call{
		Server: ref.ServerName, UserID: ref.UserID, ThreadID: ref.ThreadID,
		Method: MethodRespond, RequestID: json.RawMessage(id), Result: result, Session: ref.DriverData[SessionKey],
	}); err != nil {
		if errors.Is(err, ErrSessionGone) {
			return task.State{}, task.Protocolf("Remote MCP task was lost: %w", err)
		}
		return task.State{}, fmt.Errorf("MCP answer to the task's elicitation failed: %w", err)
	}
	poll := d.polls.hint(rt.PollInterval)
	// The server applies the response after taking it: until then the task
	// still reads input_required, and is working as far as Antler knows.
	return task.State{Status: task.StatusWorking, PollAfterSeconds: poll, DriverData: data}, nil
}

// checkContent validates an accepted answer's content against the
// question's requestedSchema (none: anything the answer's own checks let
// through). Errors name the field and the rule, never the content.
func checkContent(question, content json.RawMessage) error {
	var q struct {
		Schema json.RawMessage `json:"requestedSchema"`
	}
	if json.Unmarshal(question, &q) != nil || len(q.Schema) == 0 || string(q.Schema) == "null" {
		return nil
	}
	schemaDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(q.Schema))
	if err != nil {
		return task.NewProtocolError("the question's requestedSchema is not valid JSON")
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("antler:requested-schema", schemaDoc); err != nil {
		return task.NewProtocolError("the question's requestedSchema is not a usable JSON Schema")
	}
	sch, err := c.Compile("antler:requested-schema")
	if err != nil {
		return task.NewProtocolError("the question's requestedSchema is not a usable JSON Schema")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(content))
	if err != nil {
		return task.NewProtocolError("content: must be valid JSON")
	}
	var ve *jsonschema.ValidationError
	if err := sch.Validate(inst); errors.As(err, &ve) {
		return task.NewProtocolError(describe(ve))
	} else if err != nil {
		return task.NewProtocolError("content: does not match the question's requestedSchema")
	}
	return nil
}

// describe names the deepest failures of a validation: "content/<field>:
// <rule>" (the rules quote the schema, never the value).
func describe(ve *jsonschema.ValidationError) string {
	p := message.NewPrinter(language.English)
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		loc := "content"
		if len(e.InstanceLocation) > 0 {
			loc += "." + strings.Join(e.InstanceLocation, ".")
		}
		parts = append(parts, loc+": "+e.ErrorKind.LocalizedString(p))
	}
	walk(ve)
	if len(parts) > 3 {
		parts = append(parts[:3], "...")
	}
	return task.Truncate("content does not match the question's requestedSchema: "+strings.Join(parts, "; "), task.MaxToolErrorDetailChars)
}

// withoutHeld is driver data with no held elicitation.
func withoutHeld(data map[string]string) map[string]string {
	out := maps.Clone(data)
	if out == nil {
		out = map[string]string{}
	}
	delete(out, HeldRequestKey)
	delete(out, QuestionKey)
	return out
}
