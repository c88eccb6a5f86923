package taskstore

import (
	"context"
	"fmt"
)

// HasActive reports whether userID has a task on serverName in threadID
// that is not terminal yet. The host pins that thread's stdio session: the
// task lives in the upstream process, which must not be closed under it.
func (s *Store) HasActive(ctx context.Context, serverName, userID, threadID string) (bool, error) {
	var one int
	err := s.read.QueryRowContext(ctx, "SELECT COUNT(*) FROM (SELECT 1 FROM mcp_tasks WHERE thread_id = $1 AND user_id = $2"+
		" AND server_name = $3 AND status IN "+pollableSQL+" LIMIT 1) AS active", threadID, userID, serverName).Scan(&one)
	if err != nil {
		return false, fmt.Errorf("taskstore: active tasks of thread %s: %w", threadID, err)
	}
	return one > 0, nil
}
