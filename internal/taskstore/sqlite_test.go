package taskstore

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLiteClaimPlans guards the budget that a claim pass reads the due rows
// and not the table: each claim must find its rows through its due index and
// update them by primary key, never scanning mcp_tasks.
func TestSQLiteClaimPlans(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		name, query, index string
		args               []any
	}{
		{"ClaimDue", s.claimQ, "ix_mcp_tasks_due", []any{"owner", 1, 1, 100, 4, `["bob"]`}},
		{"ClaimCancelRequests", s.cancQ, "ix_mcp_tasks_cancel_due", []any{"owner", 1, 1, 100, `["bob"]`}},
		{"ClaimNotifications", s.notifyQ, "ix_mcp_tasks_notification_due", []any{"owner", 1, 1, 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := s.write.Query("EXPLAIN QUERY PLAN "+tt.query, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			text := strings.Join(plan, "\n")
			t.Logf("plan:\n%s", text)
			if !strings.Contains(text, "USING INDEX "+tt.index+" (") || strings.Contains(text, "SCAN mcp_tasks") {
				t.Errorf("plan does not claim through %s without a table scan:\n%s", tt.index, text)
			}
		})
	}
}

// TestSQLiteSettings checks the connection settings of sqliteWriterParams
// and sqliteReaderParams on both pools: WAL, a busy timeout, synchronous=NORMAL, one writer
// connection and query-only readers.
func TestSQLiteSettings(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tests := []struct {
		pool   string
		db     *sql.DB
		pragma string
		want   string
	}{
		{"writer", s.write, "journal_mode", "wal"},
		{"writer", s.write, "busy_timeout", "5000"},
		{"writer", s.write, "synchronous", "1"},
		{"writer", s.write, "query_only", "0"},
		{"reader", s.read, "journal_mode", "wal"},
		{"reader", s.read, "busy_timeout", "5000"},
		{"reader", s.read, "synchronous", "1"},
		{"reader", s.read, "query_only", "1"},
	}
	for _, tt := range tests {
		var got string
		if err := tt.db.QueryRow("PRAGMA " + tt.pragma).Scan(&got); err != nil {
			t.Fatalf("%s: PRAGMA %s: %v", tt.pool, tt.pragma, err)
		}
		if got != tt.want {
			t.Errorf("%s: %s = %s, want %s", tt.pool, tt.pragma, got, tt.want)
		}
	}
	if got := s.write.Stats().MaxOpenConnections; got != 1 {
		t.Errorf("writer pool allows %d connections, want 1", got)
	}
}
