package taskstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// DefaultTrackingDegradedAfter is the number of consecutive failed polls
// after which a task counts as tracking_degraded: still running remotely as
// far as anyone knows, but not being observed.
const DefaultTrackingDegradedAfter = 3

// Option configures a Store at Open.
type Option func(*Store) error

// WithTrackingDegradedAfter sets how many consecutive poll errors make a task
// tracking_degraded, which records a notification event for it; n must be at
// least 1. Without this option the store uses DefaultTrackingDegradedAfter.
func WithTrackingDegradedAfter(n int) Option {
	return func(s *Store) error {
		if n < 1 {
			return fmt.Errorf("taskstore: tracking degraded threshold must be at least 1, got %d", n)
		}
		s.trackingDegradedAfter = n
		return nil
	}
}

// TrackingDegradedAfter returns the store's tracking_degraded threshold.
func (s *Store) TrackingDegradedAfter() int { return s.trackingDegradedAfter }

// inFlightNotification reports whether a notification of an earlier event is
// being delivered; recording a newer event then leaves the delivery alone, and
// the notifier picks the newer version up afterwards.
func inFlightNotification(status string) bool {
	return status == "claimed" || status == "dispatched" || status == "retry"
}

// eventOf returns the notification event of t and whether it has one: only a
// task in an attention status or whose tracking is degraded has an event.
func (s *Store) eventOf(t Task) (map[string]any, bool) {
	if !t.Status.NeedsAttention() && !s.degraded(t) {
		return nil, false
	}
	return s.eventDoc(t), true
}

func (s *Store) degraded(t Task) bool {
	return t.ConsecutivePollErrorCount >= s.trackingDegradedAfter
}

// eventDoc is the event document of t's current state.
func (s *Store) eventDoc(t Task) map[string]any {
	degraded := s.degraded(t)
	var lastPollError any
	if degraded {
		lastPollError = nullText(t.LastPollError)
	}
	return map[string]any{
		"task_id":           t.ID,
		"task_name":         t.TaskName,
		"status":            string(t.Status),
		"result":            jsonValue(t.Result),
		"result_preview":    nullText(t.ResultPreview),
		"result_truncated":  t.ResultTruncated,
		"result_artifact":   jsonValue(t.ResultArtifact),
		"error":             nullText(t.Error),
		"input_required":    jsonValue(t.InputRequired),
		"tracking_degraded": degraded,
		"last_poll_error":   lastPollError,
	}
}

// recordEvent is DeerFlow's _record_event_if_changed, run in the transaction
// of the write that produced t (whose row that write holds locked): if t has
// an event whose fingerprint differs from the stored one, it stores the
// fingerprint and bumps event_version, and, unless a notification is in
// flight, makes the task's notification pending at now with a fresh
// delivery state. It returns the row as stored afterwards.
func (s *Store) recordEvent(ctx context.Context, tx *sql.Tx, t Task, now time.Time) (Task, error) {
	ev, ok := s.eventOf(t)
	if !ok {
		return t, nil
	}
	b, err := canonicalJSON(ev)
	if err != nil {
		return Task{}, fmt.Errorf("event fingerprint: %w", err)
	}
	sum := sha256.Sum256(b)
	fp := hex.EncodeToString(sum[:])
	if err != nil {
		return Task{}, fmt.Errorf("event fingerprint: %w", err)
	}
	if fp == t.EventFingerprint {
		return t, nil
	}
	set := "event_fingerprint = $2, event_version = event_version + 1, event_recorded_at = $3"
	args := []any{t.ID, fp, ms(now)}
	if !inFlightNotification(t.NotificationStatus) {
		set += `, notification_status = 'pending', next_notification_at = $3, notification_error = NULL,
 notification_attempt_count = 0, dispatch_version = NULL, dispatch_attempt = 0, dispatch_event = NULL,
 notification_run_id = NULL`
	}
	t, err = scanTask(tx.QueryRowContext(ctx, "UPDATE mcp_tasks SET "+set+" WHERE id = $1 RETURNING "+taskColumns, args...))
	if err != nil {
		return Task{}, fmt.Errorf("record event: %w", err)
	}
	return t, nil
}

// writeTask runs query, a single-row INSERT or fenced UPDATE without its
// RETURNING clause, and records the written task's event, in one
// transaction. It reports false, writing nothing, when query matched no row.
func (s *Store) writeTask(ctx context.Context, now time.Time, query string, args ...any) (Task, bool, error) {
	return s.writeTaskAnd(ctx, now, nil, query, args...)
}

// writeTaskAnd is writeTask that also runs also, if not nil, in the same
// transaction once query matched.
func (s *Store) writeTaskAnd(ctx context.Context, now time.Time, also func(*sql.Tx) error, query string, args ...any) (Task, bool, error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return Task{}, false, err
	}
	defer tx.Rollback()
	t, err := scanTask(tx.QueryRowContext(ctx, query+" RETURNING "+taskColumns, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, false, nil
	}
	if err != nil {
		return Task{}, false, err
	}
	if t, err = s.recordEvent(ctx, tx, t, now); err != nil {
		return Task{}, false, err
	}
	if also != nil {
		if err := also(tx); err != nil {
			return Task{}, false, err
		}
	}
	if err := tx.Commit(); err != nil {
		return Task{}, false, err
	}
	return t, true, nil
}

// nullText and jsonValue give an event's JSON value of a stored column: NULL
// (the Go zero value) is null; stored JSON is decoded, keeping numbers as
// written, and falls back to its text if it does not parse.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func jsonValue(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return string(b)
	}
	return v
}
