package taskservice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// The task views: what agents and the REST API are shown of a task. Never
// its remote id, driver data, server or an answer's content; errors
// truncated to task.MaxPublicErrorChars; task names neutralized.

// TrackingDegraded reports whether the runtime has failed to poll r so many
// times in a row (the store's tracking_degraded_after) that its status may
// be stale.
func (s *Service) TrackingDegraded(r taskstore.Task) bool {
	return r.ConsecutivePollErrorCount >= s.TrackingDegradedAfter()
}

// Item is a task as listed (the host tool list_background_tasks and GET
// .../mcp-tasks).
func (s *Service) Item(r taskstore.Task) map[string]any {
	return map[string]any{
		"task_id": r.ID, "task_name": neutralize(r.TaskName), "status": string(r.Status),
		"created_at": Timestamp(r.CreatedAt), "updated_at": Timestamp(r.UpdatedAt),
		"error":             Nullable(task.Truncate(r.Error, task.MaxPublicErrorChars)),
		"tracking_degraded": s.TrackingDegraded(r),
		"cancel_requested":  !r.CancelRequestedAt.IsZero(),
	}
}

// Detail is Item with the fields of GET .../mcp-tasks/{task_id}.
func (s *Service) Detail(r taskstore.Task) map[string]any {
	d := s.Item(r)
	d["last_polled_at"] = Timestamp(r.LastPolledAt)
	d["last_poll_error"] = Nullable(task.Truncate(r.LastPollError, task.MaxPublicErrorChars))
	d["last_cancel_error"] = Nullable(task.Truncate(r.LastCancelError, task.MaxPublicErrorChars))
	d["cancel_attempt_count"] = r.CancelAttemptCount
	d["notification_status"] = r.NotificationStatus
	d["notification_error"] = Nullable(task.Truncate(r.NotificationError, task.MaxPublicErrorChars))
	d["notification_attempt_count"] = r.NotificationAttemptCount
	d["result"] = rawOrNull(r.Result)
	d["result_preview"] = Nullable(r.ResultPreview)
	d["result_truncated"] = r.ResultTruncated
	d["result_artifact"] = rawOrNull(r.ResultArtifact)
	d["input_required"] = rawOrNull(r.InputRequired)
	d["answer"] = s.answerView(r)
	return d
}

// answerView is the state of a task's latest answer, never its content:
// null when the task never had one, else {status: pending|delivered|
// refused|abandoned, recorded_at, last_error}, and can_answer whether the
// task's driver takes answers at all.
func (s *Service) answerView(r taskstore.Task) map[string]any {
	v := map[string]any{"can_answer": s.CanAnswer(r), "status": nil, "recorded_at": nil, "last_error": nil}
	if r.AnswerStatus != "" {
		v["status"] = r.AnswerStatus
		v["recorded_at"] = Timestamp(r.AnswerRecordedAt)
		v["last_error"] = Nullable(task.Truncate(r.AnswerError, task.MaxPublicErrorChars))
	}
	return v
}

// ListView answers GET .../mcp-tasks: {"tasks": [Item...]}, newest first.
func (s *Service) ListView(ctx context.Context, sc task.Scope, limit int) (map[string]any, error) {
	rows, err := s.List(ctx, sc, limit, false)
	if err != nil {
		return nil, err
	}
	items := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		items = append(items, s.Item(r))
	}
	return map[string]any{"tasks": items}, nil
}

// DetailView answers GET .../mcp-tasks/{task_id}.
func (s *Service) DetailView(ctx context.Context, id string, sc task.Scope) (map[string]any, error) {
	return s.detailOf(s.Get(ctx, id, sc))
}

// CancelView answers POST .../{task_id}/cancel (see Cancel).
func (s *Service) CancelView(ctx context.Context, id string, sc task.Scope) (map[string]any, error) {
	return s.detailOf(s.Cancel(ctx, id, sc))
}

// AnswerView answers POST .../{task_id}/input (see Answer): the task, now
// working with the answer pending.
func (s *Service) AnswerView(ctx context.Context, id string, sc task.Scope, a task.Answer) (map[string]any, error) {
	if err := a.Validate(); err != nil {
		return nil, apierror.Wrap(err, http.StatusBadRequest, "%s", err.Error()) // names the field, never the content
	}
	return s.detailOf(s.Answer(ctx, id, sc, a))
}

// DecodeAnswer reads the body of POST .../{task_id}/input: one elicitation
// result {"action", "content"}, no other field.
func DecodeAnswer(raw []byte) (task.Answer, error) {
	var body struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || dec.More() {
		return task.Answer{}, apierror.New(http.StatusBadRequest, `body: must be one JSON object {"action": "accept"|"decline"|"cancel", "content": {...}}`)
	}
	return task.Answer{Action: body.Action, Content: body.Content}, nil
}

func (s *Service) detailOf(row taskstore.Task, err error) (map[string]any, error) {
	if err != nil {
		return nil, PublicError(err)
	}
	return s.Detail(row), nil
}

// PublicError is err as the REST API answers it: an *apierror.Error with
// DeerFlow's status and message for the runtime's refusals, err itself (an
// internal failure) otherwise.
func PublicError(err error) error {
	var nir *taskstore.NotInputRequiredError
	switch {
	case errors.Is(err, taskstore.ErrNotFound):
		return apierror.Wrap(err, http.StatusNotFound, "MCP task not found")
	case errors.Is(err, ErrNotRunning):
		return apierror.Wrap(err, http.StatusServiceUnavailable, "%s", Unavailable)
	case errors.Is(err, ErrCannotAnswer):
		return apierror.Wrap(err, http.StatusUnprocessableEntity, "%s", err.Error())
	case errors.Is(err, taskstore.ErrAnswerPending):
		return apierror.Wrap(err, http.StatusConflict, "An answer to this MCP task is already pending delivery; wait for it to be delivered")
	case errors.As(err, &nir):
		return apierror.Wrap(err, http.StatusConflict, "%s", nir.Error())
	}
	return err
}

// Unavailable is the REST API's message while the runtime does not run.
const Unavailable = "MCP task service not available"

// neutralize keeps a task name (chosen by operators, shown to models) from
// forging prompt structure.
func neutralize(s string) string {
	return strings.NewReplacer("<", "‹", ">", "›").Replace(s)
}

// Timestamp renders a task time for agents (null when unset).
func Timestamp(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Nullable is s, or null when empty.
func Nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}
