package taskstore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// scanTask reads one row of taskColumns.
func scanTask(row interface{ Scan(...any) error }) (Task, error) {
	var t Task
	err := row.Scan(
		&t.ID, &t.UserID, &t.ThreadID, textCol{&t.RunID}, textCol{&t.ToolCallID}, &t.ServerName, &t.DriverName,
		&t.RemoteTaskID, &t.TaskName, &t.TaskNameKey,
		&t.Status, jsonCol{&t.Result}, textCol{&t.ResultPreview}, &t.ResultTruncated, jsonCol{&t.ResultArtifact},
		textCol{&t.Error}, jsonCol{&t.InputRequired}, jsonCol{&t.DriverData},
		&t.NotificationStatus, textCol{&t.EventFingerprint}, &t.EventVersion, &t.NotifiedVersion, intCol{&t.DispatchVersion},
		&t.DispatchAttempt, jsonCol{&t.DispatchEvent}, textCol{&t.NotificationRunID}, textCol{&t.NotificationError}, &t.NotificationAttemptCount,
		timeCol{&t.NextNotificationAt}, textCol{&t.NotificationLeaseOwner}, timeCol{&t.NotificationLeaseExpiresAt}, textCol{&t.NotificationLeaseToken},
		timeCol{&t.NextPollAt}, timeCol{&t.LastPolledAt}, textCol{&t.LastPollError}, &t.PollAttemptCount, &t.ConsecutivePollErrorCount,
		textCol{&t.LeaseOwner}, timeCol{&t.LeaseExpiresAt}, textCol{&t.LeaseToken},
		timeCol{&t.CancelRequestedAt}, &t.CancelAttemptCount, timeCol{&t.NextCancelAt}, textCol{&t.LastCancelError},
		timeCol{&t.CompletedAt}, timeCol{&t.CreatedAt}, timeCol{&t.UpdatedAt}, timeCol{&t.EventRecordedAt},
		textCol{&t.AnswerStatus}, textCol{&t.AnswerID}, jsonCol{&t.Answer}, timeCol{&t.AnswerRecordedAt}, textCol{&t.AnswerError},
		textCol{&t.TraceParent},
	)
	return t, err
}

// scanTasks reads and closes rows.
func scanTasks(rows *sql.Rows) ([]Task, error) {
	defer rows.Close()
	var tasks []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, t)
	}
	return tasks, rows.Err()
}

// text, ms and jsonText turn Go zero values into SQL NULL parameters.
func text(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func ms(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func jsonText(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// textCol, jsonCol, intCol and timeCol scan a nullable column into a Go
// value, NULL becoming the zero value.
type (
	textCol struct{ p *string }
	jsonCol struct{ p *json.RawMessage }
	intCol  struct{ p *int }
	timeCol struct{ p *time.Time }
)

func (c textCol) Scan(v any) error {
	var s sql.NullString
	if err := s.Scan(v); err != nil {
		return err
	}
	*c.p = s.String
	return nil
}

func (c jsonCol) Scan(v any) error {
	var s sql.NullString
	if err := s.Scan(v); err != nil {
		return err
	}
	*c.p = nil
	if s.Valid {
		*c.p = json.RawMessage(s.String)
	}
	return nil
}

func (c intCol) Scan(v any) error {
	var n sql.NullInt64
	if err := n.Scan(v); err != nil {
		return err
	}
	*c.p = int(n.Int64)
	return nil
}

func (c timeCol) Scan(v any) error {
	var n sql.NullInt64
	if err := n.Scan(v); err != nil {
		return fmt.Errorf("unix milliseconds: %w", err)
	}
	*c.p = time.Time{}
	if n.Valid {
		*c.p = time.UnixMilli(n.Int64).UTC()
	}
	return nil
}
