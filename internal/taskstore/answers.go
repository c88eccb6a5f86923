package taskstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/antler-mcp/antler/internal/task"
)

// Answer statuses (the answer_status column). A task's latest answer is
// pending from RecordAnswer until the poller settles it: delivered
// (ApplyAnswer), refused (RefuseAnswer) or abandoned (the task was
// cancelled first, or the remote stopped waiting for it: AbandonAnswer). The answer's content is kept only while it is pending.
const (
	AnswerPending   = "pending"
	AnswerDelivered = "delivered"
	AnswerRefused   = "refused"
	AnswerAbandoned = "abandoned"
)

// notPendingAnswer holds for a row without a pending answer.
const notPendingAnswer = "(answer_status IS NULL OR answer_status <> '" + AnswerPending + "')"

// ErrAnswerPending is returned by RecordAnswer while an earlier answer of
// the task waits for delivery.
var ErrAnswerPending = errors.New("taskstore: an answer to this task is already pending delivery")

// ErrQuestionChanged is returned by RecordAnswerTo when the task waits for
// input but no longer asks the question the answer is for.
var ErrQuestionChanged = errors.New("taskstore: the task asks another question now")

// Question names the question an answer is for: the task's previous answer
// id and its stored question, as read (Task.Question).
type Question struct {
	AnswerID      string
	InputRequired json.RawMessage
}

// Question is the question t asks (meaningful while it is input_required).
func (t Task) Question() Question {
	return Question{AnswerID: t.AnswerID, InputRequired: t.InputRequired}
}

// NotInputRequiredError is returned by RecordAnswer for a task that is not
// waiting for input (Status is its status; CancelRequested when a cancel of
// it is pending).
type NotInputRequiredError struct {
	Status          task.Status
	CancelRequested bool
}

func (e *NotInputRequiredError) Error() string {
	if e.CancelRequested {
		return "MCP task is being cancelled; it takes no answer"
	}
	return fmt.Sprintf("MCP task is %s, not input_required; only a task waiting for input takes an answer", e.Status)
}

// RecordAnswer records the user's answer to a task in scope waiting for
// input and returns the task. In the one write, the task moves to working,
// the answer (JSON, {action, content}) becomes pending under answerID, the
// task is due at at, and any poll lease is cleared, so a status call in
// flight can no longer overwrite it. A task that is not input_required, or
// is being cancelled, is a *NotInputRequiredError; one whose earlier answer
// is still pending is ErrAnswerPending; another user's or thread's task is
// ErrNotFound.
func (s *Store) RecordAnswer(ctx context.Context, id string, sc task.Scope, answerID string, answer json.RawMessage, at time.Time) (Task, error) {
	return s.recordAnswer(ctx, id, sc, nil, answerID, answer, at)
}

// RecordAnswerTo is RecordAnswer for an answer to question q: in the same
// write, the task must still ask it (the same previous answer id and stored
// question), or the answer is not recorded and the error is
// ErrQuestionChanged. A client that read the question and answered it
// cannot have its answer taken by a later question it never saw.
func (s *Store) RecordAnswerTo(ctx context.Context, id string, sc task.Scope, q Question, answerID string, answer json.RawMessage, at time.Time) (Task, error) {
	return s.recordAnswer(ctx, id, sc, &q, answerID, answer, at)
}

func (s *Store) recordAnswer(ctx context.Context, id string, sc task.Scope, q *Question, answerID string, answer json.RawMessage, at time.Time) (Task, error) {
	if answerID == "" || len(answerID) > 64 {
		return Task{}, fmt.Errorf("taskstore: record answer to %s: answer id must have 1 to 64 characters", id)
	}
	query := `UPDATE mcp_tasks SET status = ` + statusSQL(task.StatusWorking) + `, answer_status = '` + AnswerPending + `',
 answer_id = $4, answer = $5, answer_recorded_at = $6, answer_error = NULL,
 next_poll_at = $6, updated_at = $6, ` + clearLease + `
 WHERE id = $1 AND user_id = $2 AND thread_id = $3 AND status = ` + statusSQL(task.StatusInputRequired) + `
 AND cancel_requested_at IS NULL AND ` + notPendingAnswer
	args := []any{id, sc.User, sc.Thread, answerID, jsonText(answer), ms(at)}
	if q != nil {
		query += ` AND COALESCE(answer_id, '') = $7 AND COALESCE(input_required, '') = $8`
		args = append(args, q.AnswerID, string(q.InputRequired))
	}
	t, ok, err := s.writeTask(ctx, at, query, args...)
	if err != nil {
		return Task{}, fmt.Errorf("taskstore: record answer to %s: %w", id, err)
	}
	if ok {
		return t, nil
	}
	t, err = scanTask(s.write.QueryRowContext(ctx, "SELECT "+taskColumns+
		" FROM mcp_tasks WHERE id = $1 AND user_id = $2 AND thread_id = $3", id, sc.User, sc.Thread))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Task{}, ErrNotFound
	case err != nil:
		return Task{}, fmt.Errorf("taskstore: record answer to %s: %w", id, err)
	case t.AnswerStatus == AnswerPending && !t.Status.IsTerminal():
		return t, ErrAnswerPending
	case q != nil && t.Status == task.StatusInputRequired && t.CancelRequestedAt.IsZero():
		return t, ErrQuestionChanged
	}
	return t, &NotInputRequiredError{Status: t.Status, CancelRequested: !t.CancelRequestedAt.IsZero()}
}

// ApplyPoll is ApplyState that also replaces the task's driver data with
// driverData, in the same write, when driverData is not nil.
func (s *Store) ApplyPoll(ctx context.Context, l Lease, snap State, driverData json.RawMessage, nextPollAt, polledAt time.Time) (bool, error) {
	return s.applyRemote(ctx, "apply snapshot to "+l.ID, l, "", "", "", snap, driverData, nextPollAt, polledAt)
}

// ApplyAnswer stores the remote's reply to the pending answer answerID and
// settles it (delivered, its content dropped) in one write, fenced like
// ApplyState and by the answer still being the pending one; driverData,
// when not nil, replaces the task's driver data in that write. It reports
// false when fenced: the reply is discarded and the answer stays pending,
// to be delivered again under the same id.
func (s *Store) ApplyAnswer(ctx context.Context, l Lease, answerID string, snap State, driverData json.RawMessage, nextPollAt, at time.Time) (bool, error) {
	if answerID == "" {
		return false, fmt.Errorf("taskstore: apply answer to %s: answer id is required", l.ID)
	}
	return s.applyRemote(ctx, "apply answer to "+l.ID, l, answerID, AnswerDelivered, "", snap, driverData, nextPollAt, at)
}

// AbandonAnswer stores the remote's state after it stopped waiting for the
// pending answer answerID (its question is gone), and settles the answer
// as abandoned with errText as its error, in one write fenced like
// ApplyAnswer; driverData, when not nil, replaces the task's driver data.
// It reports false when fenced.
func (s *Store) AbandonAnswer(ctx context.Context, l Lease, answerID string, snap State, driverData json.RawMessage, errText string, nextPollAt, at time.Time) (bool, error) {
	if answerID == "" {
		return false, fmt.Errorf("taskstore: abandon answer to %s: answer id is required", l.ID)
	}
	return s.applyRemote(ctx, "abandon answer to "+l.ID, l, answerID, AnswerAbandoned, errText, snap, driverData, nextPollAt, at)
}

// applyRemote writes a remote state: a poll's (answerID "", which must find
// no answer pending) or the reply to the pending answer answerID, which it
// settles as settle (delivered or abandoned) with answerErr as its error.
func (s *Store) applyRemote(ctx context.Context, what string, l Lease, answerID, settle, answerErr string, snap State, driverData json.RawMessage, nextPollAt, polledAt time.Time) (bool, error) {
	if err := checkSchedule(snap.Status, nextPollAt); err != nil {
		return false, fmt.Errorf("taskstore: %s: %w", what, err)
	}
	completed := time.Time{}
	if snap.Status.IsTerminal() {
		nextPollAt, completed = time.Time{}, polledAt
	}
	args := l.args(stateArgs(snap)...)
	args = append(args, ms(nextPollAt), ms(polledAt), ms(completed), jsonText(driverData))
	set, guard := "", " AND "+notPendingAnswer
	if answerID != "" {
		set = ", answer_status = $16, answer = NULL, answer_error = $17"
		guard = " AND answer_status = '" + AnswerPending + "' AND answer_id = $15"
		args = append(args, answerID, settle, text(answerErr))
	}
	return s.fencedWrite(ctx, what, polledAt, `UPDATE mcp_tasks SET `+stateSet+`,
 next_poll_at = $11, last_polled_at = $12, last_poll_error = NULL, consecutive_poll_error_count = 0,
 completed_at = $13, updated_at = $12, driver_data = COALESCE($14, driver_data)`+set+`, `+clearLease+`
 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3 AND lease_expires_at >= $12
 AND status NOT IN `+terminalSQL()+` AND cancel_requested_at IS NULL`+guard, args...)
}

// RefuseAnswer records that the remote refused the pending answer answerID
// for good: the task is input_required again with its question, errText as
// its error (so its event, and the user, hear of the refusal), the answer
// refused and its content dropped, next polled at nextPollAt. Fenced like
// ApplyAnswer; it reports false when fenced.
func (s *Store) RefuseAnswer(ctx context.Context, l Lease, answerID, errText string, nextPollAt, at time.Time) (bool, error) {
	if nextPollAt.IsZero() {
		return false, fmt.Errorf("taskstore: refuse answer to %s: next poll time is required", l.ID)
	}
	return s.fencedWrite(ctx, "refuse answer to "+l.ID, at, `UPDATE mcp_tasks SET status = `+statusSQL(task.StatusInputRequired)+`, error = $5,
 answer_status = '`+AnswerRefused+`', answer = NULL, answer_error = $5, next_poll_at = $6,
 last_poll_error = NULL, consecutive_poll_error_count = 0, updated_at = $7, `+clearLease+`
 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3 AND lease_expires_at >= $7
 AND answer_status = '`+AnswerPending+`' AND answer_id = $4
 AND status NOT IN `+terminalSQL()+` AND cancel_requested_at IS NULL`,
		l.args(answerID, text(errText), ms(nextPollAt), ms(at))...)
}

// ReleaseAnswerClaim gives back a poll lease after a failed delivery of the
// pending answer answerID: like ReleaseClaim, and errText also becomes the
// answer's error. The answer stays pending, to be delivered again under
// the same id. It reports false when the lease is no longer held or the
// answer is no longer the pending one.
func (s *Store) ReleaseAnswerClaim(ctx context.Context, l Lease, answerID string, nextPollAt time.Time, errText string, at time.Time) (bool, error) {
	if nextPollAt.IsZero() {
		return false, fmt.Errorf("taskstore: release answer claim on %s: next poll time is required", l.ID)
	}
	return s.fencedWrite(ctx, "release answer claim on "+l.ID, at, `UPDATE mcp_tasks SET next_poll_at = $4, last_poll_error = $5,
 answer_error = $5, consecutive_poll_error_count = consecutive_poll_error_count + 1, updated_at = $6, `+clearLease+`
 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3 AND answer_status = '`+AnswerPending+`' AND answer_id = $7`,
		l.args(ms(nextPollAt), text(errText), ms(at), answerID)...)
}
