package taskstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/antler-mcp/antler/internal/task"
)

// ActiveTaskLimitError refuses a submit of a user who already has Limit
// active tasks (pollable ones, plus submits in progress). Its text is safe to
// show the model: it names no task, server or remote id.
type ActiveTaskLimitError struct{ Limit int }

func (e *ActiveTaskLimitError) Error() string {
	return fmt.Sprintf("You already have %d active background tasks, the most one user may run at once. "+
		"Wait for one to finish, or cancel one, before starting another.", e.Limit)
}

// ReserveTaskSlot reserves one of userID's limit active-task slots for the
// task about to be submitted as id, until now+ttl. It counts the user's
// pollable tasks and live reservations and refuses with an
// *ActiveTaskLimitError when they reach limit; the count and the reservation
// are one transaction that concurrent reservations of the same user wait for
// (the single SQLite writer; a per-user advisory lock on Postgres), so two
// submits can never both take the last slot. Create turns the reservation
// into the task row in its own transaction; ReleaseTaskSlot gives it back
// when the submit fails. A reservation left by a process that died expires
// at now+ttl. Expired reservations of the user are deleted here.
func (s *Store) ReserveTaskSlot(ctx context.Context, id, userID string, limit int, now time.Time, ttl time.Duration) error {
	switch {
	case limit < 1:
		return fmt.Errorf("taskstore: reserve task slot: limit must be positive, got %d", limit)
	case ttl < time.Millisecond:
		return fmt.Errorf("taskstore: reserve task slot: ttl must be at least 1ms, got %v", ttl)
	}
	if err := checkNewTask(NewTask{ID: id, UserID: userID, ThreadID: "-", ServerName: "-", DriverName: "-",
		RemoteTaskID: "-", TaskName: "-", State: State{Status: task.StatusCompleted}}); err != nil {
		return err
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("taskstore: reserve task slot: %w", err)
	}
	defer tx.Rollback()
	if err := s.d.lockUser(ctx, tx, userID); err != nil {
		return fmt.Errorf("taskstore: reserve task slot: %w", err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM mcp_task_reservations WHERE user_id = $1 AND expires_at < $2", userID, ms(now)); err != nil {
		return fmt.Errorf("taskstore: reserve task slot: %w", err)
	}
	// One statement, so the two counts read one snapshot even under
	// Postgres's READ COMMITTED.
	res, err := tx.ExecContext(ctx, `INSERT INTO mcp_task_reservations (id, user_id, expires_at)
 SELECT CAST($1 AS VARCHAR(64)), CAST($2 AS VARCHAR(64)), CAST($3 AS BIGINT)
 WHERE (SELECT COUNT(*) FROM mcp_tasks WHERE user_id = $2 AND status IN `+pollableSQL()+`)
 + (SELECT COUNT(*) FROM mcp_task_reservations WHERE user_id = $2) < $4`, id, userID, ms(now.Add(ttl)), limit)
	if err != nil {
		return fmt.Errorf("taskstore: reserve task slot: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("taskstore: reserve task slot: %w", err)
	} else if n == 0 {
		return &ActiveTaskLimitError{Limit: limit}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("taskstore: reserve task slot: %w", err)
	}
	return nil
}

// ReleaseTaskSlot gives back the reservation of id, if it still exists.
func (s *Store) ReleaseTaskSlot(ctx context.Context, id string) error {
	if _, err := s.write.ExecContext(ctx, "DELETE FROM mcp_task_reservations WHERE id = $1", id); err != nil {
		return fmt.Errorf("taskstore: release task slot %s: %w", id, err)
	}
	return nil
}

// consumeSlot is Create's statement that turns the reservation of the task
// being inserted (already in tx) into its row. When there was no reservation
// to take over (a submit outlived its reservation's TTL, or none was made)
// and nt has an ActiveLimit, it recounts the user's active tasks and live
// reservations in the same transaction and refuses past the limit, so a slow
// submit cannot overshoot the cap.
func (s *Store) consumeSlot(ctx context.Context, tx *sql.Tx, nt NewTask, now time.Time) error {
	res, err := tx.ExecContext(ctx, "DELETE FROM mcp_task_reservations WHERE id = $1", nt.ID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 || nt.ActiveLimit < 1 || !nt.Status.IsPollable() {
		return err
	}
	if err := s.d.lockUser(ctx, tx, nt.UserID); err != nil {
		return err
	}
	var active int
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM mcp_tasks WHERE user_id = $1 AND status IN `+pollableSQL()+`)
 + (SELECT COUNT(*) FROM mcp_task_reservations WHERE user_id = $1 AND expires_at >= $2)`, nt.UserID, ms(now)).Scan(&active); err != nil {
		return err
	}
	if active > nt.ActiveLimit { // the count includes the row being created
		return &ActiveTaskLimitError{Limit: nt.ActiveLimit}
	}
	return nil
}
