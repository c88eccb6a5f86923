package taskstore

import (
	"context"
	"fmt"

	"github.com/antler-mcp/antler/internal/task"
)

// HasActive reports whether the scope's user has a task on serverName in
// the scope's thread that is not terminal yet. The host pins that thread's stdio session: the
// task lives in the upstream process, which must not be closed under it.
func (s *Store) HasActive(ctx context.Context, serverName string, sc task.Scope) (bool, error) {
	var one int
	err := s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM mcp_tasks WHERE thread_id = $1 AND user_id = $2"+
		" AND server_name = $3 AND status IN "+pollableSQL()+" LIMIT 1) AS active", sc.Thread, sc.User, serverName).Scan(&one)
	if err != nil {
		return false, fmt.Errorf("taskstore: active tasks of thread %s: %w", sc.Thread, err)
	}
	return one > 0, nil
}
