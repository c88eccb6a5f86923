package taskstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/antler-mcp/antler/internal/task"
)

// pollableSQL and terminalSQL are the task model's status sets as SQL
// lists, for "status IN (...)".
func pollableSQL() string { return statusList(task.PollableStatuses()) }
func terminalSQL() string { return statusList(task.TerminalStatuses()) }

// statusList spells statuses as an SQL list: "('a', 'b')".
func statusList(statuses []task.Status) string {
	quoted := make([]string, len(statuses))
	for i, st := range statuses {
		quoted[i] = statusSQL(st)
	}
	return "(" + strings.Join(quoted, ", ") + ")"
}

// statusSQL is a status as an SQL literal (no status spelling has a quote).
func statusSQL(st task.Status) string { return "'" + string(st) + "'" }

// Lease identifies one claim of a task: the task's id and the lease owner
// and token the claim wrote. Every write under a claim is fenced by all
// three, so a late writer never overwrites a newer claim's state.
type Lease struct {
	ID, Owner, Token string
}

// Lease returns the poll or cancel lease of a task claimed by ClaimDue or
// ClaimCancelRequests.
func (t Task) Lease() Lease {
	return Lease{ID: t.ID, Owner: t.LeaseOwner, Token: t.LeaseToken}
}

// Scope returns the user and thread the task belongs to.
func (t Task) Scope() task.Scope {
	return task.Scope{User: t.UserID, Thread: t.ThreadID}
}

// args are the lease as the $1 id, $2 owner, $3 token of a fenced statement,
// followed by more.
func (l Lease) args(more ...any) []any {
	return append([]any{l.ID, l.Owner, l.Token}, more...)
}

// taskColumns is the column list every SELECT and RETURNING reads, in the
// order scanTask expects.
const taskColumns = `id, user_id, thread_id, run_id, tool_call_id, server_name, driver_name,
 remote_task_id, task_name, task_name_key,
 status, result, result_preview, result_truncated, result_artifact, error, input_required, driver_data,
 notification_status, event_fingerprint, event_version, notified_version, dispatch_version,
 dispatch_attempt, dispatch_event, notification_run_id, notification_error, notification_attempt_count,
 next_notification_at, notification_lease_owner, notification_lease_expires_at, notification_lease_token,
 next_poll_at, last_polled_at, last_poll_error, poll_attempt_count, consecutive_poll_error_count,
 lease_owner, lease_expires_at, lease_token,
 cancel_requested_at, cancel_attempt_count, next_cancel_at, last_cancel_error,
 completed_at, created_at, updated_at, event_recorded_at,
 answer_status, answer_id, answer, answer_recorded_at, answer_error, trace_parent`

// Claim conditions: $1 owner, $2 lease expiry, $3 now, $4 limit.
func claimableDueWhere() string {
	return "status IN " + pollableSQL() + " AND cancel_requested_at IS NULL AND next_poll_at <= $3"
}

func claimCancelWhere() string {
	return "next_cancel_at <= $3 AND cancel_requested_at IS NOT NULL AND status NOT IN " + terminalSQL() +
		" AND (lease_expires_at IS NULL OR lease_expires_at < $3)"
}

func claimDueSet(d dialect) string {
	return "lease_owner = $1, lease_expires_at = $2, lease_token = " + d.tokenSQL() +
		", poll_attempt_count = poll_attempt_count + 1, updated_at = $3"
}

func claimCancelSet(d dialect) string {
	return "lease_owner = $1, lease_expires_at = $2, lease_token = " + d.tokenSQL() +
		", cancel_attempt_count = cancel_attempt_count + 1, updated_at = $3"
}

// stateSet writes a State from $4…$10 (see stateArgs).
const stateSet = "status = $4, result = $5, result_preview = $6, result_truncated = $7," +
	" result_artifact = $8, error = $9, input_required = $10"

const clearLease = "lease_owner = NULL, lease_expires_at = NULL, lease_token = NULL"

// Create inserts a task. A second task for the same user, server and remote
// id is a *DuplicateError; any other constraint violation is returned as is.
// A task created in an attention status records its notification event
// (event_version 1, notification pending at now). The task's slot
// reservation (ReserveTaskSlot), if any, is consumed in the same transaction.
func (s *Store) Create(ctx context.Context, nt NewTask, now time.Time) (Task, error) {
	if err := checkNewTask(nt); err != nil {
		return Task{}, err
	}
	driverData := nt.DriverData
	if driverData == nil {
		driverData = []byte("{}")
	}
	next, completed := nt.NextPollAt, time.Time{}
	if nt.Status.IsTerminal() {
		next, completed = time.Time{}, now
	}
	args := append([]any{nt.ID, nt.UserID, nt.ThreadID}, stateArgs(nt.State)...)
	args = append(args, text(nt.RunID), text(nt.ToolCallID), nt.ServerName, nt.DriverName,
		nt.RemoteTaskID, nt.TaskName, NameKey(nt.TaskName), string(driverData),
		ms(next), ms(completed), ms(now), text(nt.TraceParent))
	consume := func(tx *sql.Tx) error { return s.consumeSlot(ctx, tx, nt, now) }
	t, _, err := s.writeTaskAnd(ctx, now, consume, `INSERT INTO mcp_tasks (id, user_id, thread_id,
 status, result, result_preview, result_truncated, result_artifact, error, input_required,
 run_id, tool_call_id, server_name, driver_name, remote_task_id, task_name, task_name_key, driver_data,
 next_poll_at, completed_at, created_at, updated_at, trace_parent)
 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $21, $22)`, args...)
	if err != nil {
		if s.d.isDuplicateRemote(err) {
			return Task{}, &DuplicateError{ServerName: nt.ServerName, RemoteTaskID: nt.RemoteTaskID, Err: err}
		}
		if le := (*ActiveTaskLimitError)(nil); errors.As(err, &le) {
			return Task{}, le
		}
		return Task{}, fmt.Errorf("taskstore: create task %s: %w", nt.ID, err)
	}
	return t, nil
}

// checkNewTask refuses what the two engines would treat differently:
// missing values and values wider than their column (Postgres enforces
// VARCHAR widths, SQLite does not).
func checkNewTask(nt NewTask) error {
	if err := checkSchedule(nt.Status, nt.NextPollAt); err != nil {
		return err
	}
	fields := []struct {
		column   string
		value    string
		max      int
		required bool
	}{
		{"id", nt.ID, 64, true},
		{"user_id", nt.UserID, 64, true},
		{"thread_id", nt.ThreadID, 64, true},
		{"run_id", nt.RunID, 64, false},
		{"tool_call_id", nt.ToolCallID, 128, false},
		{"server_name", nt.ServerName, 128, true},
		{"driver_name", nt.DriverName, 64, true},
		{"remote_task_id", nt.RemoteTaskID, 255, true},
		{"task_name", nt.TaskName, 255, true},
		{"trace_parent", nt.TraceParent, 64, false},
	}
	for _, f := range fields {
		if f.required && f.value == "" {
			return fmt.Errorf("taskstore: %s must not be empty", f.column)
		}
		if n := utf8.RuneCountInString(f.value); n > f.max {
			return fmt.Errorf("taskstore: %s must not exceed %d characters (got %d)", f.column, f.max, n)
		}
	}
	return nil
}

// checkSchedule refuses an unknown status and a pollable one without a next
// poll time, which no claim would ever pick up again.
func checkSchedule(status task.Status, nextPollAt time.Time) error {
	switch {
	case status.IsTerminal():
		return nil
	case !status.IsPollable():
		return fmt.Errorf("taskstore: unknown task status %q", status)
	case nextPollAt.IsZero():
		return fmt.Errorf("taskstore: a %s task needs a next poll time", status)
	}
	return nil
}

// Get returns the task with this id if userID owns it, else ErrNotFound.
func (s *Store) Get(ctx context.Context, id, userID string) (Task, error) {
	row := s.read.QueryRowContext(ctx,
		"SELECT "+taskColumns+" FROM mcp_tasks WHERE id = $1 AND user_id = $2", id, userID)
	t, err := scanTask(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, ErrNotFound
	}
	if err != nil {
		return Task{}, fmt.Errorf("taskstore: get task %s: %w", id, err)
	}
	return t, nil
}

// ListByThread returns up to limit of the user's tasks in the thread, newest
// first (created_at, then id, descending); activeOnly keeps pollable ones.
func (s *Store) ListByThread(ctx context.Context, sc task.Scope, limit int, activeOnly bool) ([]Task, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("taskstore: list limit must be positive, got %d", limit)
	}
	q := "SELECT " + taskColumns + " FROM mcp_tasks WHERE thread_id = $1 AND user_id = $2"
	if activeOnly {
		q += " AND status IN " + pollableSQL()
	}
	q += " ORDER BY created_at DESC, id DESC LIMIT $3"
	rows, err := s.read.QueryContext(ctx, q, sc.Thread, sc.User, limit)
	if err != nil {
		return nil, fmt.Errorf("taskstore: list tasks: %w", err)
	}
	tasks, err := scanTasks(rows)
	if err != nil {
		return nil, fmt.Errorf("taskstore: list tasks: %w", err)
	}
	return tasks, nil
}

// ClaimDue leases up to limit pollable tasks whose next poll is due at now,
// that have no cancellation request and no live lease (a lease expiring
// before now is free again), in fair order across users (ClaimDuePerUser with
// no per-user bound).
func (s *Store) ClaimDue(ctx context.Context, now time.Time, owner string, lease time.Duration, limit int) ([]Task, error) {
	return s.ClaimDuePerUser(ctx, now, owner, lease, limit, 0)
}

// ClaimDuePerUser is ClaimDue with one user's share bounded: afterwards no
// user holds more than perUser live poll leases (0: no bound). Due tasks are
// taken round-robin by user, a user's tasks in due order and a user with
// polls already in flight after those without, so one user's backlog never
// delays another user's task by more than one turn. Each claimed row gets
// owner, a lease until now+lease and a fresh random LeaseToken, and counts a
// poll attempt. Rows come back in that round-robin order: by their rank
// among the claimed rows of their user, then next_poll_at, then id.
func (s *Store) ClaimDuePerUser(ctx context.Context, now time.Time, owner string, lease time.Duration, limit, perUser int) ([]Task, error) {
	return s.ClaimDueExcept(ctx, now, owner, lease, limit, perUser, nil)
}

// ClaimDueExcept is ClaimDuePerUser that claims none of the tasks of the
// users in except: a poller leaves out the users whose polls it still runs up
// to their share, including polls whose lease a cancel request cleared.
func (s *Store) ClaimDueExcept(ctx context.Context, now time.Time, owner string, lease time.Duration, limit, perUser int, except []string) ([]Task, error) {
	if perUser < 0 {
		return nil, fmt.Errorf("taskstore: claim due tasks: per-user bound must not be negative, got %d", perUser)
	}
	if perUser == 0 {
		perUser = math.MaxInt32
	}
	tasks, err := s.claim(ctx, s.claimQ, now, owner, lease, limit, perUser, usersJSON(except))
	if err != nil {
		return nil, fmt.Errorf("taskstore: claim due tasks: %w", err)
	}
	slices.SortFunc(tasks, func(a, b Task) int {
		return cmp.Or(a.NextPollAt.Compare(b.NextPollAt), strings.Compare(a.ID, b.ID))
	})
	turn := make(map[string]int, len(tasks))
	rank := make(map[string]int, len(tasks))
	for _, t := range tasks {
		turn[t.UserID]++
		rank[t.ID] = turn[t.UserID]
	}
	slices.SortStableFunc(tasks, func(a, b Task) int { return cmp.Compare(rank[a.ID], rank[b.ID]) })
	return tasks, nil
}

// ClaimCancelRequests leases up to limit non-terminal tasks with a pending
// cancellation due at now and no live lease, counting a cancel attempt. Rows
// come back ordered by next_cancel_at, then id.
func (s *Store) ClaimCancelRequests(ctx context.Context, now time.Time, owner string, lease time.Duration, limit int) ([]Task, error) {
	return s.ClaimCancelRequestsExcept(ctx, now, owner, lease, limit, nil)
}

// ClaimCancelRequestsExcept is ClaimCancelRequests that claims none of the
// tasks of the users in except (those whose cancels the caller already runs
// up to their share).
func (s *Store) ClaimCancelRequestsExcept(ctx context.Context, now time.Time, owner string, lease time.Duration, limit int, except []string) ([]Task, error) {
	tasks, err := s.claim(ctx, s.cancQ, now, owner, lease, limit, usersJSON(except))
	if err != nil {
		return nil, fmt.Errorf("taskstore: claim cancel requests: %w", err)
	}
	slices.SortFunc(tasks, func(a, b Task) int {
		return cmp.Or(a.NextCancelAt.Compare(b.NextCancelAt), strings.Compare(a.ID, b.ID))
	})
	return tasks, nil
}

// claim runs a claim statement with $1 owner, $2 lease expiry, $3 now, $4
// limit and any further arguments from $5 on.
func (s *Store) claim(ctx context.Context, query string, now time.Time, owner string, lease time.Duration, limit int, more ...any) ([]Task, error) {
	if err := checkClaim(owner, lease, limit); err != nil {
		return nil, err
	}
	rows, err := s.write.QueryContext(ctx, query, append([]any{owner, ms(now.Add(lease)), ms(now), limit}, more...)...)
	if err != nil {
		return nil, err
	}
	return scanTasks(rows)
}

func checkClaim(owner string, lease time.Duration, limit int) error {
	switch {
	case owner == "" || utf8.RuneCountInString(owner) > 128:
		return fmt.Errorf("lease owner must have 1 to 128 characters, got %q", owner)
	case lease < time.Millisecond:
		return fmt.Errorf("lease must be at least 1ms, got %v", lease)
	case limit <= 0:
		return fmt.Errorf("limit must be positive, got %d", limit)
	}
	return nil
}

// ApplyState writes a poll result and releases the lease, but only while
// the lease's owner still holds it with its token, unexpired at polledAt (the time the
// remote call completed), on a task that is neither terminal nor asked to
// cancel, and has no answer pending (its claim delivers the answer instead).
// It reports false when fenced: the result is stale and was discarded. A
// terminal snapshot sets completed_at and clears next_poll_at. An applied
// snapshot records the task's notification event if it changed
// (recordEvent), at polledAt.
func (s *Store) ApplyState(ctx context.Context, l Lease, snap State, nextPollAt, polledAt time.Time) (bool, error) {
	return s.ApplyPoll(ctx, l, snap, nil, nextPollAt, polledAt)
}

// ReleaseClaim gives back a poll lease after a failed poll: it schedules the
// next poll, records errText and counts a consecutive error; reaching the
// store's TrackingDegradedAfter records a tracking_degraded event (recordEvent)
// at at. It reports false when the lease is no longer held.
func (s *Store) ReleaseClaim(ctx context.Context, l Lease, nextPollAt time.Time, errText string, at time.Time) (bool, error) {
	if nextPollAt.IsZero() {
		return false, fmt.Errorf("taskstore: release claim on %s: next poll time is required", l.ID)
	}
	return s.fencedWrite(ctx, "release claim on "+l.ID, at, `UPDATE mcp_tasks SET next_poll_at = $4, last_poll_error = $5,
 consecutive_poll_error_count = consecutive_poll_error_count + 1, updated_at = $6, `+clearLease+`
 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3`,
		l.args(ms(nextPollAt), text(errText), ms(at))...)
}

// usersJSON is the JSON array of users a claim leaves out ("[]" for none).
func usersJSON(users []string) string {
	if len(users) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(users)
	return string(b)
}

// ReturnClaim gives back a poll lease (cancel false) or a cancel lease
// (cancel true) that was claimed but never used: the lease is cleared and the
// attempt the claim counted is uncounted, so the task is due again as it was.
// It reports false when the lease is no longer held.
func (s *Store) ReturnClaim(ctx context.Context, l Lease, cancel bool) (bool, error) {
	counter := "poll_attempt_count"
	if cancel {
		counter = "cancel_attempt_count"
	}
	return s.update(ctx, "return claim on "+l.ID, "UPDATE mcp_tasks SET "+counter+" = "+counter+" - 1, "+clearLease+
		" WHERE id = $1 AND lease_owner = $2 AND lease_token = $3", l.args()...)
}

// RequestCancel records the user's cancellation of a task in scope and
// returns the task, or ErrNotFound. The first request on a non-terminal task
// sets cancel_requested_at and next_cancel_at and clears the poll lease, so an
// in-flight poll can no longer write; a repeated request (or one on a
// terminal task) changes nothing, preserving an active cancel lease.
func (s *Store) RequestCancel(ctx context.Context, id string, sc task.Scope, at time.Time) (Task, error) {
	row := s.write.QueryRowContext(ctx, `UPDATE mcp_tasks SET cancel_requested_at = $4,
 next_cancel_at = COALESCE(next_cancel_at, $4), updated_at = $4, `+clearLease+`
 WHERE id = $1 AND user_id = $2 AND thread_id = $3
 AND cancel_requested_at IS NULL AND status NOT IN `+terminalSQL()+`
 RETURNING `+taskColumns, id, sc.User, sc.Thread, ms(at))
	t, err := scanTask(row)
	if errors.Is(err, sql.ErrNoRows) {
		row = s.write.QueryRowContext(ctx, "SELECT "+taskColumns+
			" FROM mcp_tasks WHERE id = $1 AND user_id = $2 AND thread_id = $3", id, sc.User, sc.Thread)
		t, err = scanTask(row)
		if errors.Is(err, sql.ErrNoRows) {
			return Task{}, ErrNotFound
		}
	}
	if err != nil {
		return Task{}, fmt.Errorf("taskstore: request cancel of %s: %w", id, err)
	}
	return t, nil
}

// ApplyCancelState writes the remote answer to a cancellation (which must
// be terminal, else ErrNotTerminal) and ends all scheduling, but only while
// the cancel lease is held, unexpired at completedAt, on a
// task not yet terminal. It reports false when fenced; otherwise it records
// the task's notification event (recordEvent) at completedAt.
func (s *Store) ApplyCancelState(ctx context.Context, l Lease, snap State, completedAt time.Time) (bool, error) {
	if !snap.Status.IsTerminal() {
		return false, fmt.Errorf("taskstore: apply cancel snapshot to %s (status %q): %w", l.ID, snap.Status, ErrNotTerminal)
	}
	args := append(l.args(stateArgs(snap)...), ms(completedAt))
	return s.fencedWrite(ctx, "apply cancel snapshot to "+l.ID, completedAt, `UPDATE mcp_tasks SET `+stateSet+`,
 next_poll_at = NULL, next_cancel_at = NULL, last_cancel_error = NULL,
 answer = NULL, answer_status = CASE WHEN answer_status = '`+AnswerPending+`' THEN '`+AnswerAbandoned+`' ELSE answer_status END,
 completed_at = $11, updated_at = $11, `+clearLease+`
 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3 AND lease_expires_at >= $11
 AND status NOT IN `+terminalSQL(), args...)
}

// ReleaseCancelClaim gives back a cancel lease: it schedules the next attempt
// and records errText; an empty errText (a routine release) keeps the previous
// last_cancel_error. It reports false when the lease is no longer held.
func (s *Store) ReleaseCancelClaim(ctx context.Context, l Lease, nextCancelAt time.Time, errText string, at time.Time) (bool, error) {
	if nextCancelAt.IsZero() {
		return false, fmt.Errorf("taskstore: release cancel claim on %s: next cancel time is required", l.ID)
	}
	return s.update(ctx, "release cancel claim on "+l.ID, `UPDATE mcp_tasks SET next_cancel_at = $4,
 last_cancel_error = COALESCE($5, last_cancel_error), updated_at = $6, `+clearLease+`
 WHERE id = $1 AND lease_owner = $2 AND lease_token = $3`,
		l.args(ms(nextCancelAt), text(errText), ms(at))...)
}

// fencedWrite runs a fenced single-row UPDATE and records the task's event
// (recordEvent) in the same transaction. It reports whether the UPDATE
// matched; a fenced write records nothing.
func (s *Store) fencedWrite(ctx context.Context, what string, now time.Time, query string, args ...any) (bool, error) {
	_, ok, err := s.writeTask(ctx, now, query, args...)
	if err != nil {
		return false, fmt.Errorf("taskstore: %s: %w", what, err)
	}
	return ok, nil
}

// update runs a fenced single-row UPDATE and reports whether it matched.
func (s *Store) update(ctx context.Context, what, query string, args ...any) (bool, error) {
	res, err := s.write.ExecContext(ctx, query, args...)
	if err != nil {
		return false, fmt.Errorf("taskstore: %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("taskstore: %s: %w", what, err)
	}
	return n == 1, nil
}

// stateArgs are the values of stateSet's $4…$10.
func stateArgs(s State) []any {
	return []any{string(s.Status), jsonText(s.Result), text(s.ResultPreview), s.ResultTruncated,
		jsonText(s.ResultArtifact), text(s.Error), jsonText(s.InputRequired)}
}

// ListByUser returns up to limit of the user's tasks in every thread, newest
// first (created_at, then id, descending), after the position (before,
// beforeID) of the previous page's last row: created earlier than before, or
// at before with a smaller id. A zero before starts at the newest task.
// Paging with the last row's position reads every task exactly once, however
// many share a millisecond. It serves MCP's tasks/list, which is bound to the
// principal rather than to a thread.
func (s *Store) ListByUser(ctx context.Context, userID string, before time.Time, beforeID string, limit int) ([]Task, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("taskstore: list limit must be positive, got %d", limit)
	}
	q := "SELECT " + taskColumns + " FROM mcp_tasks WHERE user_id = $1"
	args := []any{userID, limit}
	if !before.IsZero() {
		q += " AND (created_at < $3 OR (created_at = $3 AND id < $4))"
		args = append(args, before.UnixMilli(), beforeID)
	}
	rows, err := s.read.QueryContext(ctx, q+" ORDER BY created_at DESC, id DESC LIMIT $2", args...)
	if err != nil {
		return nil, fmt.Errorf("taskstore: list tasks of user: %w", err)
	}
	tasks, err := scanTasks(rows)
	if err != nil {
		return nil, fmt.Errorf("taskstore: list tasks of user: %w", err)
	}
	return tasks, nil
}
