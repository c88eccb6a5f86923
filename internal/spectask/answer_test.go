package spectask_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/spectask"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// answerable is request for the reports toolset with its respond_tool, so
// its tasks take answers.
func answerable(args string) task.SubmitRequest {
	sub := request(args)
	sub.DriverData[ordinary.RespondToolKey] = "respond_report"
	return sub
}

// asking submits, as alice, a reports task that asks question at once and
// waits until it does; it returns the task and its input request id.
func (r *rig) asking(rev spectask.Revision, sub task.SubmitRequest) (taskstore.Task, string) {
	r.t.Helper()
	raw, err := r.svc.Submit(context.Background(), rev, alice, sub, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	row := r.waitStatus(createdID(r.t, rev, raw), "input_required")
	got, err := r.svc.Get(context.Background(), spectask.Rev20260728, alice, row.ID)
	if err != nil {
		r.t.Fatal(err)
	}
	var d struct {
		InputRequests map[string]struct {
			Method string `json:"method"`
			Params struct {
				Message string `json:"message"`
			} `json:"params"`
		} `json:"inputRequests"`
	}
	if err := json.Unmarshal(got, &d); err != nil || len(d.InputRequests) != 1 {
		r.t.Fatalf("tasks/get of a task waiting for input: %s (%v)", got, err)
	}
	for k, q := range d.InputRequests {
		if q.Method != "elicitation/create" || k != spectask.InputRequestID(row) {
			r.t.Fatalf("input request %q %+v, want elicitation/create under %q", k, q, spectask.InputRequestID(row))
		}
		return row, k
	}
	return row, ""
}

const askArgs = `{"topic": "margins", "delay_ms": 0, "ask": "Which audience is the report for?"}`

// TestUpdate answers a 2026-07-28 task's question with tasks/update: each
// refusal has its error (and leaves the task waiting), and the one good
// answer is recorded before the ack and reaches the report.
func TestUpdate(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	row, key := r.asking(spectask.Rev20260728, answerable(askArgs))
	update := func(c spectask.Caller, rev spectask.Revision, responses string) error {
		_, err := r.svc.Update(ctx, rev, c, row.ID, json.RawMessage(responses))
		return err
	}
	for _, tt := range []struct {
		name      string
		caller    spectask.Caller
		rev       spectask.Revision
		responses string
		want      error
		text      string
	}{
		{"another principal", bob, spectask.Rev20260728, fmt.Sprintf(`{%q: {"action": "decline"}}`, key), spectask.ErrNotFound, ""},
		{"2025-11-25", alice, spectask.Rev20251125, fmt.Sprintf(`{%q: {"action": "decline"}}`, key), spectask.ErrMethodNotFound, ""},
		{"unknown id", alice, spectask.Rev20260728, `{"format": {"action": "decline"}}`, spectask.ErrInvalidParams, `unknown input request id "format"`},
		{"an unknown id beside the right one", alice, spectask.Rev20260728, fmt.Sprintf(`{%q: {"action": "decline"}, "zzz": {"action": "decline"}}`, key), spectask.ErrInvalidParams, `"zzz"`},
		{"no responses", alice, spectask.Rev20260728, `{}`, spectask.ErrInvalidParams, "inputResponses"},
		{"not an object", alice, spectask.Rev20260728, `[1]`, spectask.ErrInvalidParams, "inputResponses"},
		{"accept without content", alice, spectask.Rev20260728, fmt.Sprintf(`{%q: {"action": "accept"}}`, key), spectask.ErrInvalidParams, "content: required"},
		{"an unknown action", alice, spectask.Rev20260728, fmt.Sprintf(`{%q: {"action": "maybe"}}`, key), spectask.ErrInvalidParams, "action: must be one of"},
		{"an unknown member", alice, spectask.Rev20260728, fmt.Sprintf(`{%q: {"action": "decline", "why": 1}}`, key), spectask.ErrInvalidParams, "one elicitation result"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := update(tt.caller, tt.rev, tt.responses)
			if !errors.Is(err, tt.want) || !strings.Contains(fmt.Sprint(err), tt.text) {
				t.Errorf("Update: %v, want %v with %q", err, tt.want, tt.text)
			}
			if now, _ := r.store.Get(ctx, row.ID, "alice"); now.Status != "input_required" || now.AnswerStatus != "" {
				t.Errorf("after a refused update the task is %s, answer %q", now.Status, now.AnswerStatus)
			}
		})
	}
	raw, err := r.svc.Update(ctx, spectask.Rev20260728, alice, row.ID,
		json.RawMessage(fmt.Sprintf(`{%q: {"action": "accept", "content": {"audience": "the board"}, "_meta": {}}}`, key)))
	if err != nil || string(raw) != `{}` {
		t.Fatalf("Update = %s (%v), want an empty ack", raw, err)
	}
	// Durable before the ack: the answer is in the row, pending.
	if now, err := r.store.Get(ctx, row.ID, "alice"); err != nil || now.AnswerStatus == "" || now.Status == "input_required" {
		t.Errorf("after the ack the row is %s, answer %q (%v), want the answer recorded", now.Status, now.AnswerStatus, err)
	}
	if err := update(alice, spectask.Rev20260728, fmt.Sprintf(`{%q: {"action": "decline"}}`, key)); !errors.Is(err, spectask.ErrAnswerConflict) {
		t.Errorf("a second answer: %v, want ErrAnswerConflict", err)
	}
	done := r.waitStatus(row.ID, "completed")
	if !strings.Contains(string(done.Result), `the user answered {\"audience\":\"the board\"}`) {
		t.Errorf("the report does not reflect the answer: %s", done.Result)
	}
	if done.AnswerStatus != taskstore.AnswerDelivered {
		t.Errorf("answer status %q, want delivered", done.AnswerStatus)
	}
}

// TestUpdateCannotAnswer: a task whose toolset has no respond_tool says so
// (the REST route's 422), and says so in its statusMessage.
func TestUpdateCannotAnswer(t *testing.T) {
	r := newRig(t)
	row, key := r.asking(spectask.Rev20260728, request(askArgs))
	_, err := r.svc.Update(context.Background(), spectask.Rev20260728, alice, row.ID, json.RawMessage(fmt.Sprintf(`{%q: {"action": "decline"}}`, key)))
	if !errors.Is(err, spectask.ErrCannotAnswer) {
		t.Errorf("Update: %v, want ErrCannotAnswer", err)
	}
	got, _ := r.svc.Get(context.Background(), spectask.Rev20260728, alice, row.ID)
	if !strings.Contains(string(got), "Antler cannot pass an answer on") {
		t.Errorf("statusMessage of an unanswerable task: %s", got)
	}
}

// TestResultAsking: a 2025-11-25 tasks/result of a task waiting for input
// asks the client once, records its answer and returns the report that
// reflects it; an asker's error ends the wait and leaves the task waiting.
func TestResultAsking(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	row, key := r.asking(spectask.Rev20251125, answerable(askArgs))
	failed := errors.New("the client went away")
	if _, err := r.svc.ResultAsking(ctx, spectask.Rev20251125, alice, row.ID, func(context.Context, string, json.RawMessage) (task.Answer, error) {
		return task.Answer{}, failed
	}); !errors.Is(err, failed) {
		t.Errorf("ResultAsking with a failing asker: %v", err)
	}
	bad := func(context.Context, string, json.RawMessage) (task.Answer, error) {
		return task.Answer{Action: "accept"}, nil
	}
	if _, err := r.svc.ResultAsking(ctx, spectask.Rev20251125, alice, row.ID, bad); !errors.Is(err, spectask.ErrInvalidParams) || !strings.Contains(err.Error(), "content: required") {
		t.Errorf("ResultAsking with a malformed answer: %v, want ErrInvalidParams", err)
	}
	if now, _ := r.store.Get(ctx, row.ID, "alice"); now.Status != "input_required" {
		t.Fatalf("the task is %s after failed asks, want input_required", now.Status)
	}
	if _, err := r.svc.ResultAsking(ctx, spectask.Rev20251125, bob, row.ID, bad); !errors.Is(err, spectask.ErrNotFound) {
		t.Errorf("bob's ResultAsking: %v, want ErrNotFound", err)
	}

	var asks atomic.Int32
	res, err := r.svc.ResultAsking(ctx, spectask.Rev20251125, alice, row.ID, func(_ context.Context, id string, params json.RawMessage) (task.Answer, error) {
		asks.Add(1)
		var p struct {
			Mode            string          `json:"mode"`
			Message         string          `json:"message"`
			RequestedSchema json.RawMessage `json:"requestedSchema"`
			Meta            map[string]struct {
				TaskID string `json:"taskId"`
			} `json:"_meta"`
		}
		if err := json.Unmarshal(params, &p); err != nil || id != row.ID || p.Mode != "form" || p.Message != "Which audience is the report for?" ||
			p.Meta[spectask.RelatedTaskKey].TaskID != row.ID || !strings.Contains(string(p.RequestedSchema), `"answer"`) {
			t.Errorf("elicitation params %s for %s (%v)", params, id, err)
		}
		return task.Answer{Action: "accept", Content: json.RawMessage(`{"answer": "investors"}`)}, nil
	})
	if err != nil {
		t.Fatalf("ResultAsking: %v", err)
	}
	if !strings.Contains(string(res), `the user answered {\"answer\":\"investors\"}`) || asks.Load() != 1 {
		t.Errorf("result %s after %d asks, want the answered report after one", res, asks.Load())
	}
	if key == "" {
		t.Error("no input request id")
	}
}
