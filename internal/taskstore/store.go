// Package taskstore persists durable MCP tasks (their rows, leases and event
// outbox) in SQLite
// or PostgreSQL behind one query layer.
//
// The background task service claims due rows under a lease, asks the remote
// server, and writes the answer back only while its lease is still held. Every
// claim hands out a fresh random token, and every apply or release is fenced
// by lease owner and token, so neither a stale poll of another replica nor a
// late release of this one can overwrite newer state. A cancellation request
// clears the poll lease, which fences any poll already in flight.
//
// Times are stored as unix milliseconds and returned as UTC time.Time values,
// the zero time standing for SQL NULL; empty strings and nil JSON likewise
// stand for NULL. Status values are the task model's task.Status, stored as
// their spellings; the store's status sets are task.PollableStatuses and
// task.TerminalStatuses.
package taskstore

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"golang.org/x/text/cases"

	"github.com/antler-mcp/antler/internal/task"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationTable is goose's version table for this package's migrations, kept
// apart from any other migration set sharing the database.
const migrationTable = "taskstore_goose_db_version"

// ErrNotFound is returned when a task does not exist or is not visible to
// the caller (another user's or another thread's task).
var ErrNotFound = errors.New("taskstore: task not found")

// ErrNotTerminal is returned by ApplyCancelState when the remote answer to
// a cancellation does not report a terminal status.
var ErrNotTerminal = errors.New("taskstore: a cancellation response must report a terminal task status")

// ErrDamaged is returned by Open when SQLite reports the database file
// corrupt or not a database while opening or migrating it.
var ErrDamaged = errors.New("taskstore: the SQLite database is damaged")

// DuplicateError reports that the user already tracks this remote task on this
// server: the handle has a durable owner, so the caller must not cancel it.
type DuplicateError struct {
	ServerName   string
	RemoteTaskID string
	Err          error // the driver's constraint violation
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("Remote MCP task '%s' is already tracked for server '%s' by this user", e.RemoteTaskID, e.ServerName)
}

func (e *DuplicateError) Unwrap() error { return e.Err }

// State is the remote task state the service writes, already normalised
// and bounded by the task model.
type State struct {
	Status          task.Status
	Result          json.RawMessage
	ResultPreview   string
	ResultTruncated bool
	ResultArtifact  json.RawMessage
	Error           string
	InputRequired   json.RawMessage
}

// NewTask is what Create persists for a freshly submitted remote task.
type NewTask struct {
	ID           string // the local id the service chose
	UserID       string
	ThreadID     string
	RunID        string
	ToolCallID   string
	ServerName   string
	DriverName   string
	RemoteTaskID string
	TaskName     string
	State
	DriverData json.RawMessage // nil stores {}
	NextPollAt time.Time       // required while pollable; NULL for a terminal status
	// ActiveLimit, when positive, is the user's max_active_tasks_per_user:
	// a pollable task created without a live slot reservation (it expired
	// during a long submit) is refused with an *ActiveTaskLimitError when
	// it would take the user past it.
	ActiveLimit int
	// TraceParent is the W3C traceparent of the submitting call's span
	// ("" when traces are off), at most 64 characters.
	TraceParent string
}

// Task is one row of mcp_tasks. Empty strings, nil JSON and zero times are
// SQL NULLs; DispatchVersion 0 is NULL (event versions start at 1).
type Task struct {
	ID           string
	UserID       string
	ThreadID     string
	RunID        string
	ToolCallID   string
	ServerName   string
	DriverName   string
	RemoteTaskID string
	TaskName     string
	TaskNameKey  string // NameKey(TaskName)
	State
	DriverData json.RawMessage

	NotificationStatus         string
	EventFingerprint           string
	EventVersion               int
	NotifiedVersion            int
	DispatchVersion            int
	DispatchAttempt            int
	DispatchEvent              json.RawMessage
	NotificationRunID          string
	NotificationError          string
	NotificationAttemptCount   int
	NextNotificationAt         time.Time
	NotificationLeaseOwner     string
	NotificationLeaseExpiresAt time.Time
	NotificationLeaseToken     string

	NextPollAt                time.Time
	LastPolledAt              time.Time
	LastPollError             string
	PollAttemptCount          int
	ConsecutivePollErrorCount int
	LeaseOwner                string
	LeaseExpiresAt            time.Time
	LeaseToken                string

	CancelRequestedAt  time.Time
	CancelAttemptCount int
	NextCancelAt       time.Time
	LastCancelError    string

	CompletedAt time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// EventRecordedAt is when the current notification event was recorded
	// (zero if the task never had one).
	EventRecordedAt time.Time

	// AnswerStatus is "" (never answered) or one of the Answer statuses.
	AnswerStatus string
	// AnswerID is the latest answer's idempotency key.
	AnswerID string
	// Answer is the pending answer, {action, content}: the user's data,
	// never logged nor shown; nil once the answer is settled.
	Answer json.RawMessage
	// AnswerRecordedAt is when the latest answer was recorded.
	AnswerRecordedAt time.Time
	// AnswerError is why the latest answer's delivery failed or was refused.
	AnswerError string
	// TraceParent is the submitting call's W3C traceparent ("" for none),
	// the link of the task's poll and delivery traces.
	TraceParent string
}

// Store is the task table on one database. It is safe for concurrent use.
type Store struct {
	d       dialect
	write   *sql.DB // SQLite: one connection, IMMEDIATE transactions
	read    *sql.DB // SQLite: query-only pool; Postgres: same as write
	claimQ  string  // ClaimDue statement
	cancQ   string  // ClaimCancelRequests statement
	notifyQ string  // ClaimNotifications statement

	// trackingDegradedAfter is how many consecutive poll errors make a task
	// tracking_degraded (WithTrackingDegradedAfter).
	trackingDegradedAfter int
}

// Open connects to the store named by dsn and brings its schema up to date.
// dsn is "sqlite:<path>" or a plain file path for SQLite, or a
// "postgres://…" / "postgresql://…" URL. An empty dsn, an in-memory SQLite
// database and other schemes are refused: the store must be durable.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	d, target, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	s := &Store{
		d:                     d,
		claimQ:                d.claimDueSQL(),
		cancQ:                 d.claimSQL(claimCancelSet(d), claimCancelWhere()+" AND "+d.notAmongUsers("$5"), "next_cancel_at"),
		notifyQ:               d.claimNotifySQL(),
		trackingDegradedAfter: DefaultTrackingDegradedAfter,
	}
	for _, opt := range opts {
		if err := opt(s); err != nil {
			return nil, err
		}
	}
	if s.write, s.read, err = d.open(ctx, target); err != nil {
		return nil, d.damaged(target, err)
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, d.damaged(target, err)
	}
	return s, nil
}

// parseDSN picks the engine for dsn and returns what its driver opens.
func parseDSN(dsn string) (dialect, string, error) {
	switch {
	case dsn == "":
		return 0, "", errors.New("taskstore: empty database DSN (pass a SQLite file path or a postgres:// URL)")
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return dialectPostgres, dsn, nil
	}
	path := strings.TrimPrefix(dsn, "sqlite:")
	switch {
	case path != dsn && path == "":
		return 0, "", errors.New("taskstore: sqlite DSN has no file path")
	case path == dsn && strings.Contains(dsn, "://"):
		scheme, _, _ := strings.Cut(dsn, "://")
		return 0, "", fmt.Errorf("taskstore: unsupported database scheme %q (use sqlite:<path> or postgres://)", scheme)
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return 0, "", fmt.Errorf("taskstore: sqlite DSN %q must be a plain file path (in-memory or URI databases are not durable)", path)
	case strings.Contains(path, "?"):
		return 0, "", fmt.Errorf("taskstore: sqlite path %q must not contain '?' (connection settings are fixed by the store)", path)
	}
	return dialectSQLite, path, nil
}

func (s *Store) migrate(ctx context.Context) error {
	p, err := s.d.migrations(ctx, s.write)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("taskstore: migrate %s: %w", s.d, err)
	}
	return nil
}

// migrations is the goose provider of the embedded migrations on db.
func (d dialect) migrations(ctx context.Context, db *sql.DB) (*goose.Provider, error) {
	migrations, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("taskstore: migrations: %w", err)
	}
	gd, opts, err := d.migrationOptions(ctx, db)
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		goose.WithTableName(migrationTable),
		goose.WithDisableGlobalRegistry(true),
		goose.WithLogger(goose.NopLogger()),
	)
	p, err := goose.NewProvider(gd, db, migrations, opts...)
	if err != nil {
		return nil, fmt.Errorf("taskstore: migrations: %w", err)
	}
	return p, nil
}

// Close releases the database connections.
func (s *Store) Close() error {
	err := s.write.Close()
	if s.read != s.write {
		err = errors.Join(err, s.read.Close())
	}
	return err
}

// NameKey is the lookup key of a task name: trimmed and Unicode case-folded,
// so "Quarterly Report " and "quarterly report" name the same task.
func NameKey(name string) string {
	return cases.Fold().String(strings.TrimSpace(name))
}
