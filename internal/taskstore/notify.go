package taskstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/antler-mcp/antler/internal/task"
)

// Notification statuses of a task's event outbox. A task starts at none; recording
// an event makes it pending; a claim makes it claimed; a send in progress is
// dispatched; a failed send waits in retry; it ends delivered or dead_letter
// until a newer event makes it pending again.
const (
	NotifyNone       = "none"
	NotifyPending    = "pending"
	NotifyClaimed    = "claimed"
	NotifyDispatched = "dispatched"
	NotifyRetry      = "retry"
	NotifyDelivered  = "delivered"
	NotifyDeadLetter = "dead_letter"
)

// Notification claim: $1 owner, $2 lease expiry, $3 now, $4 limit. A claim
// takes undelivered event versions that are due ($3) and whose notification
// lease is free; dead letters and delivered rows wait for a newer event. A
// held row stays due (a claim never moves next_notification_at), so a user's
// deliveries in flight count against its turn.
const (
	dueNotifyWhere = "notification_status IN ('pending', 'claimed', 'retry', 'dispatched')" +
		" AND event_version > notified_version" +
		" AND (next_notification_at IS NULL OR next_notification_at <= $3)"
	clearNotifyLease = "notification_lease_owner = NULL, notification_lease_expires_at = NULL, notification_lease_token = NULL"
	// notifyFence holds while owner ($2) holds the notification lease with
	// token ($3), unexpired at now ($4), for dispatch version $5.
	notifyFence = "id = $1 AND notification_lease_owner = $2 AND notification_lease_token = $3" +
		" AND notification_lease_expires_at >= $4 AND dispatch_version = $5"
	resetDispatch = "dispatch_version = NULL, dispatch_attempt = 0, dispatch_event = NULL, notification_run_id = NULL"
)

func claimNotifySet(d dialect) string {
	return "notification_lease_owner = $1, notification_lease_expires_at = $2, notification_lease_token = " +
		d.tokenSQL() + ", updated_at = $3"
}

// Event returns t's event document as canonical JSON: the document whose
// fingerprint the store records when t is in an attention status or its
// tracking is degraded.
func (s *Store) Event(t Task) json.RawMessage {
	b, err := canonicalJSON(s.eventDoc(t))
	if err != nil { // only values decoded from JSON are inside
		return json.RawMessage(`null`)
	}
	return b
}

func canonicalJSON(ev map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ClaimNotifications leases up to limit tasks with an undelivered event due
// at now, in one transaction. A pending or claimed row, or a retry whose
// dispatch version is older than the latest event, is rebuilt: it gets the
// latest event as its dispatch_event and dispatch_version (a new version
// restarts dispatch_attempt and notification_attempt_count at 0) and becomes
// claimed. A dispatched row, or a retry of the latest version, keeps the
// snapshot it was sent with, so a resend carries the same event.
//
// Events are taken round-robin by user, a user's in due order and a user
// with deliveries in flight after those without: one claim takes every
// owed user's oldest event before any user's second. (Across claims it has
// no memory: each starts again from the users with the oldest events.) Rows
// come back ordered by next_notification_at, then id.
func (s *Store) ClaimNotifications(ctx context.Context, now time.Time, owner string, lease time.Duration, limit int) ([]Task, error) {
	if err := checkClaim(owner, lease, limit); err != nil {
		return nil, fmt.Errorf("taskstore: claim notifications: %w", err)
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("taskstore: claim notifications: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, s.notifyQ, owner, ms(now.Add(lease)), ms(now), limit)
	if err != nil {
		return nil, fmt.Errorf("taskstore: claim notifications: %w", err)
	}
	claimed, err := scanTasks(rows)
	if err != nil {
		return nil, fmt.Errorf("taskstore: claim notifications: %w", err)
	}
	for i, t := range claimed {
		rebuild := t.NotificationStatus == NotifyPending || t.NotificationStatus == NotifyClaimed ||
			(t.NotificationStatus == NotifyRetry && t.DispatchVersion != t.EventVersion)
		if !rebuild {
			continue
		}
		// The latest state, even if it no longer needs attention (tracking
		// recovered since): the recorded version is owed, and its news is
		// that state.
		ev := s.Event(t)
		q := `UPDATE mcp_tasks SET notification_status = 'claimed',
 dispatch_attempt = CASE WHEN dispatch_version = event_version THEN dispatch_attempt ELSE 0 END,
 notification_attempt_count = CASE WHEN dispatch_version = event_version THEN notification_attempt_count ELSE 0 END,
 dispatch_version = event_version, dispatch_event = $3, notification_run_id = NULL
 WHERE id = $1 AND notification_lease_token = $2 RETURNING ` + taskColumns
		if claimed[i], err = scanTask(tx.QueryRowContext(ctx, q, t.ID, t.NotificationLeaseToken, string(ev))); err != nil {
			return nil, fmt.Errorf("taskstore: rebuild notification of %s: %w", t.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("taskstore: claim notifications: %w", err)
	}
	slices.SortFunc(claimed, func(a, b Task) int {
		return cmp.Or(a.NextNotificationAt.Compare(b.NextNotificationAt), strings.Compare(a.ID, b.ID))
	})
	return claimed, nil
}

// NotifyLease identifies one notification claim: the task's notification
// lease (owner and token from ClaimNotifications) and the dispatch version
// claimed. Every write below is fenced by all four and by the lease being
// unexpired at the write's time, so a late writer never overwrites a newer
// claim.
type NotifyLease struct {
	Lease
	Version int
}

// NotifyLease returns the notification lease of a task claimed by
// ClaimNotifications.
func (t Task) NotifyLease() NotifyLease {
	return NotifyLease{Lease: Lease{ID: t.ID, Owner: t.NotificationLeaseOwner, Token: t.NotificationLeaseToken}, Version: t.DispatchVersion}
}

func (l NotifyLease) args(now time.Time) []any {
	return l.Lease.args(ms(now), l.Version)
}

// MarkDispatched records that the claimed version is being sent, keeping the
// lease for the duration of the send: if the sender dies, the row stays
// dispatched and the next claim resends the same snapshot with the same
// idempotency key. It reports false when fenced.
func (s *Store) MarkDispatched(ctx context.Context, l NotifyLease, now time.Time) (bool, error) {
	return s.update(ctx, "mark notification of "+l.ID+" dispatched", `UPDATE mcp_tasks SET
 notification_status = 'dispatched', notification_error = NULL, updated_at = $4
 WHERE `+notifyFence+` AND notification_status IN ('claimed', 'retry', 'dispatched')`, l.args(now)...)
}

// FinishDelivered records a successful delivery of the claimed version: it
// becomes the notified version, and the task is delivered, or pending again
// at now if a newer event was recorded meanwhile. Dispatch state and the
// failure count reset and the lease is released.
func (s *Store) FinishDelivered(ctx context.Context, l NotifyLease, now time.Time) (bool, error) {
	return s.update(ctx, "finish notification of "+l.ID, `UPDATE mcp_tasks SET notified_version = dispatch_version,
 notification_status = CASE WHEN event_version > dispatch_version THEN 'pending' ELSE 'delivered' END,
 next_notification_at = CASE WHEN event_version > dispatch_version THEN $4 ELSE NULL END,
 notification_error = NULL, notification_attempt_count = 0, `+resetDispatch+`, updated_at = $4, `+clearNotifyLease+`
 WHERE `+notifyFence+` AND notification_status = 'dispatched'`, l.args(now)...)
}

// FinishFailed records a failed delivery: the task waits in retry until
// next, with errText and one more counted failure, keeping the snapshot it
// was sent with. answered says the receiver answered with a failure: this
// attempt is known not to have taken, so the next send is a new dispatch
// attempt (a new idempotency key). Without an answer the receiver may have
// the request, so the next send repeats the attempt: same key, same body.
// The lease is released.
func (s *Store) FinishFailed(ctx context.Context, l NotifyLease, errText string, answered bool, next, now time.Time) (bool, error) {
	return s.update(ctx, "finish notification of "+l.ID, `UPDATE mcp_tasks SET notification_status = 'retry',
 dispatch_attempt = dispatch_attempt + $8, notification_attempt_count = notification_attempt_count + 1,
 notification_error = $6, next_notification_at = $7, updated_at = $4, `+clearNotifyLease+`
 WHERE `+notifyFence+` AND notification_status = 'dispatched'`, append(l.args(now), text(errText), ms(next), boolInt(answered))...)
}

// ReleaseNotification gives the claim back without a verdict on the
// attempt: the task becomes pending at next, its snapshot dropped so the
// next claim sends the latest event, with the same dispatch attempt (and so
// the same idempotency key: the receiver may have the request). countFailure
// spends one of the failure budget; errText, if not empty, replaces the
// recorded error.
func (s *Store) ReleaseNotification(ctx context.Context, l NotifyLease, errText string, countFailure bool, next, now time.Time) (bool, error) {
	return s.update(ctx, "release notification of "+l.ID, `UPDATE mcp_tasks SET notification_status = 'pending',
 dispatch_event = NULL, notification_run_id = NULL,
 notification_attempt_count = notification_attempt_count + $6, notification_error = COALESCE($7, notification_error),
 next_notification_at = $8, updated_at = $4, `+clearNotifyLease+`
 WHERE `+notifyFence+` AND notification_status IN ('claimed', 'retry', 'dispatched')`,
		append(l.args(now), boolInt(countFailure), text(errText), ms(next))...)
}

// DeadLetter stops delivering the claimed version with errText. If a newer
// event was recorded meanwhile, the task becomes pending at now with fresh
// counters instead (the newer event is still delivered). countFailure adds
// the failure that caused it to the count.
func (s *Store) DeadLetter(ctx context.Context, l NotifyLease, errText string, countFailure bool, now time.Time) (bool, error) {
	return s.update(ctx, "dead-letter notification of "+l.ID, `UPDATE mcp_tasks SET
 notification_status = CASE WHEN event_version > dispatch_version THEN 'pending' ELSE 'dead_letter' END,
 next_notification_at = CASE WHEN event_version > dispatch_version THEN $4 ELSE NULL END,
 notification_attempt_count = CASE WHEN event_version > dispatch_version THEN 0 ELSE notification_attempt_count + $6 END,
 notification_error = $7, `+resetDispatch+`, updated_at = $4, `+clearNotifyLease+`
 WHERE `+notifyFence+` AND notification_status IN ('claimed', 'retry', 'dispatched')`,
		append(l.args(now), boolInt(countFailure), text(errText))...)
}

// ThreadEvents returns, oldest first, up to limit of the tasks in scope
// whose current event was recorded after the position (at, id):
// later than at, or at at with an id greater than id (use "" to include
// all of at). Paging with the last row's position reads every row exactly
// once, however many share a millisecond.
func (s *Store) ThreadEvents(ctx context.Context, sc task.Scope, at time.Time, id string, limit int) ([]Task, error) {
	return s.events(ctx, "thread events", "thread_id = $5 AND ", sc.User, at, id, limit, sc.Thread)
}

// UserEvents is ThreadEvents over every thread of the user: what an MCP
// client bound to the principal, not to a thread, watches.
func (s *Store) UserEvents(ctx context.Context, userID string, at time.Time, id string, limit int) ([]Task, error) {
	return s.events(ctx, "user events", "", userID, at, id, limit)
}

// events runs the events page query with scope (conditions on $5 on, each
// followed by AND) in front of the user and position conditions.
func (s *Store) events(ctx context.Context, what, scope, userID string, at time.Time, id string, limit int, more ...any) ([]Task, error) {
	if limit <= 0 {
		return nil, errors.New("taskstore: " + what + " limit must be positive")
	}
	args := append([]any{at.UnixMilli(), userID, id, limit}, more...)
	rows, err := s.read.QueryContext(ctx, "SELECT "+taskColumns+` FROM mcp_tasks
 WHERE `+scope+`event_recorded_at >= $1 AND user_id = $2
 AND (event_recorded_at > $1 OR id > $3)
 ORDER BY event_recorded_at, id LIMIT $4`, args...)
	if err != nil {
		return nil, fmt.Errorf("taskstore: %s: %w", what, err)
	}
	tasks, err := scanTasks(rows)
	if err != nil {
		return nil, fmt.Errorf("taskstore: %s: %w", what, err)
	}
	return tasks, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
