package spectask

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// Answers to a task waiting for input, through the MCP endpoint: the
// 2026-07-28 tasks/update with inputResponses, and the 2025-11-25
// elicitation/create a tasks/result sends its client. Both record the
// answer with the task service's Answer, the call the REST route makes:
// the same validation, the same refusals, and the answer is in the store,
// in the write that moves the task back to working, before either is
// acknowledged; the task service's loop delivers it through the task's
// driver.

// Errors of an answer the door maps to JSON-RPC errors (the REST route's
// 409 and 422).
var (
	// ErrAnswerConflict is an answer to a task that takes none now: it is
	// not waiting for input, is being cancelled, or an earlier answer is
	// still pending delivery.
	ErrAnswerConflict = errors.New("spectask: the task takes no answer now")
	// ErrCannotAnswer is an answer to a task whose driver cannot pass one
	// on to its server.
	ErrCannotAnswer = errors.New("spectask: the task cannot take answers")
)

// Update answers tasks/update (2026-07-28 only): raw is the request's
// inputResponses, an object keyed by the input request ids tasks/get
// listed, each value an elicitation result ({action, content}). Antler's
// task asks one question at a time, so one response is taken: a key that
// is not the outstanding request's id is ErrInvalidParams naming it. The
// answer is recorded (durably, before the empty ack) as the REST route
// records it; a task that takes no answer is ErrAnswerConflict or
// ErrCannotAnswer, another principal's task ErrNotFound.
func (s *Service) Update(ctx context.Context, rev Revision, c Caller, taskID string, raw json.RawMessage) (json.RawMessage, error) {
	if rev != Rev20260728 {
		return nil, fmt.Errorf("%w: tasks/update", ErrMethodNotFound)
	}
	row, err := s.owned(ctx, c, taskID)
	if err != nil {
		return nil, err
	}
	var responses map[string]json.RawMessage
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &responses) != nil || len(responses) == 0 {
		return nil, fmt.Errorf("%w: inputResponses: must be an object with one response per outstanding input request id", ErrInvalidParams)
	}
	keys := make([]string, 0, len(responses))
	for k := range responses {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	key := keys[0]
	if row.Status == task.StatusInputRequired && s.ts.CanAnswer(row) {
		want := InputRequestID(row)
		for _, k := range keys {
			if k != want {
				return nil, unknownInput(k, want)
			}
		}
	}
	a, err := decodeAnswer(key, responses[key])
	if err != nil {
		return nil, err
	}
	if _, err := s.record(ctx, row, key, a); err != nil {
		return nil, err
	}
	return json.RawMessage(`{}`), nil
}

func unknownInput(got, want string) error {
	return fmt.Errorf("%w: inputResponses: unknown input request id %q (the task's outstanding input request is %q)", ErrInvalidParams, task.Truncate(got, 80), want)
}

// decodeAnswer reads one elicitation result, {action, content, _meta}; any
// other member is refused, as the REST route refuses it.
func decodeAnswer(key string, raw json.RawMessage) (task.Answer, error) {
	var r struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
		Meta    json.RawMessage `json:"_meta"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || dec.More() {
		return task.Answer{}, fmt.Errorf(`%w: inputResponses[%q]: must be one elicitation result {"action": "accept"|"decline"|"cancel", "content": {...}}`, ErrInvalidParams, task.Truncate(key, 80))
	}
	return task.Answer{Action: r.Action, Content: r.Content}, nil
}

// record checks the answer to the question key of row (the caller's task,
// as read) and records it with the task service. Errors name the field or
// the task's state, never the content.
func (s *Service) record(ctx context.Context, row taskstore.Task, key string, a task.Answer) (taskstore.Task, error) {
	if err := a.Validate(); err != nil {
		return taskstore.Task{}, fmt.Errorf("%w: inputResponses[%q].%s", ErrInvalidParams, task.Truncate(key, 80), err.Error())
	}
	if !s.ts.CanAnswer(row) {
		return taskstore.Task{}, fmt.Errorf("%w: %s", ErrCannotAnswer, taskservice.ErrCannotAnswer.Error())
	}
	// Recorded only while the task asks the question key was derived from.
	out, err := s.ts.AnswerQuestion(ctx, row.ID, row.Scope(), row.Question(), a)
	var nir *taskstore.NotInputRequiredError
	switch {
	case err == nil:
		s.log.Info("MCP task answer recorded through the MCP endpoint", "task_id", row.ID, "action", a.Action)
		return out, nil
	case errors.Is(err, taskstore.ErrNotFound):
		return taskstore.Task{}, ErrNotFound
	case errors.Is(err, taskservice.ErrCannotAnswer):
		return taskstore.Task{}, fmt.Errorf("%w: %s", ErrCannotAnswer, err.Error())
	case errors.Is(err, taskstore.ErrQuestionChanged):
		return taskstore.Task{}, fmt.Errorf("%w: the task asks another question now; answer that one", ErrAnswerConflict)
	case errors.Is(err, taskstore.ErrAnswerPending):
		return taskstore.Task{}, fmt.Errorf("%w: an answer to this task is already pending delivery; wait for it to be delivered", ErrAnswerConflict)
	case errors.As(err, &nir):
		return taskstore.Task{}, fmt.Errorf("%w: %s", ErrAnswerConflict, nir.Error())
	}
	return taskstore.Task{}, err
}

// Asker sends the question of a task waiting for input to the client and
// returns its answer: params are the elicitation/create params, with the
// related-task _meta. Its error ends the tasks/result it was called from.
type Asker func(ctx context.Context, taskID string, params json.RawMessage) (task.Answer, error)

// ask puts the question of row, the caller's task waiting for input, to
// the client with ask, once per question (asked holds the ids already
// put), and records the answer. It reports an error that ends tasks/result:
// the client's, or an answer the task service refuses as malformed. An
// answer that lost a race (the task was answered or cancelled meanwhile)
// is dropped: the task has moved on, and the caller keeps waiting.
func (s *Service) ask(ctx context.Context, row taskstore.Task, asked map[string]bool, ask Asker) error {
	if row.Status != task.StatusInputRequired || !row.CancelRequestedAt.IsZero() || row.AnswerStatus == taskstore.AnswerPending || !s.ts.CanAnswer(row) {
		return nil
	}
	key := InputRequestID(row)
	if asked[key] {
		return nil
	}
	asked[key] = true
	params := elicitationOf(row)
	if row.AnswerStatus == taskstore.AnswerRefused && row.AnswerError != "" {
		params["message"] = fmt.Sprint(params["message"], "\n\n(", msgRefused, task.Truncate(row.AnswerError, task.MaxPublicErrorChars), ")")
	}
	params["_meta"] = map[string]any{RelatedTaskKey: map[string]string{"taskId": row.ID}}
	b, err := marshal(params)
	if err != nil {
		return err
	}
	a, err := ask(ctx, row.ID, b)
	if err != nil {
		return err
	}
	// The question may have changed while the client was answering.
	now, err := s.ts.GetOwned(ctx, row.ID, row.UserID)
	if err != nil {
		return err
	}
	if now.Status != task.StatusInputRequired || InputRequestID(now) != key {
		s.log.Info("MCP task answer from elicitation dropped: the task moved on while the client answered", "task_id", row.ID)
		return nil
	}
	_, err = s.record(ctx, now, key, a)
	if errors.Is(err, ErrAnswerConflict) {
		return nil
	}
	return err
}
