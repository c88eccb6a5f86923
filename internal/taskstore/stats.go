package taskstore

import (
	"context"
	"fmt"

	"github.com/antler-mcp/antler/internal/task"
)

// Stats is the store's task counts, for the metrics: every stored task by
// status, the active ones whose tracking is degraded, and the answers
// recorded and not delivered yet.
type Stats struct {
	ByStatus       map[task.Status]int
	Degraded       int
	AnswersPending int
}

// Stats counts the stored tasks in one statement. It reads every row's
// status (a scan of the table, which the metrics scrape pays, not a call).
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT status, COUNT(*),
 COALESCE(SUM(CASE WHEN status IN `+pollableSQL()+` AND consecutive_poll_error_count >= $1 THEN 1 ELSE 0 END), 0),
 COALESCE(SUM(CASE WHEN answer_status = '`+AnswerPending+`' THEN 1 ELSE 0 END), 0)
 FROM mcp_tasks GROUP BY status`, s.trackingDegradedAfter)
	if err != nil {
		return Stats{}, fmt.Errorf("taskstore: stats: %w", err)
	}
	defer rows.Close()
	st := Stats{ByStatus: map[task.Status]int{}}
	for rows.Next() {
		var (
			status                 task.Status
			n, degraded, answering int
		)
		if err := rows.Scan(&status, &n, &degraded, &answering); err != nil {
			return Stats{}, fmt.Errorf("taskstore: stats: %w", err)
		}
		st.ByStatus[status] = n
		st.Degraded += degraded
		st.AnswersPending += answering
	}
	if err := rows.Err(); err != nil {
		return Stats{}, fmt.Errorf("taskstore: stats: %w", err)
	}
	return st, nil
}
