package taskstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// dialect is everything that differs between the two engines. The schema and
// every other statement are shared; keep this file the only place that knows
// which engine it is talking to.
type dialect int

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

// uniqueRemoteConstraint names the (user_id, server_name, remote_task_id)
// constraint; sqliteUniqueRemoteColumns is how SQLite names the same
// constraint in its error message.
const (
	uniqueRemoteConstraint    = "uq_mcp_tasks_user_server_remote"
	sqliteUniqueRemoteColumns = "mcp_tasks.user_id, mcp_tasks.server_name, mcp_tasks.remote_task_id"
)

// SQLite connection settings (go-libraries.md §4.1): WAL so readers never
// block the writer, a busy timeout so a second process waits instead of
// failing, synchronous=NORMAL (durable at checkpoints, safe in WAL). The writer
// begins transactions IMMEDIATE so it never has to upgrade a read lock; readers
// are query-only.
const (
	sqliteWriterParams = "_busy_timeout=5000&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate"
	sqliteReaderParams = "_busy_timeout=5000&_synchronous=NORMAL&_query_only=1"
	sqliteReaders      = 4
)

// postgresConns bounds the Postgres pool; statements are short, so a few
// connections serve many concurrent polls.
const postgresConns = 16

func (d dialect) String() string {
	if d == dialectPostgres {
		return "postgres"
	}
	return "sqlite"
}

// open returns the writer and reader pools. On SQLite they differ (one writer
// connection, several query-only readers); on Postgres they are one pool.
func (d dialect) open(ctx context.Context, target string) (writer, reader *sql.DB, err error) {
	if d == dialectPostgres {
		db, err := sql.Open("pgx", target)
		if err != nil {
			return nil, nil, fmt.Errorf("taskstore: open postgres: %w", err)
		}
		db.SetMaxOpenConns(postgresConns)
		db.SetMaxIdleConns(postgresConns)
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, nil, fmt.Errorf("taskstore: connect to postgres: %w", err)
		}
		return db, db, nil
	}

	writer, err = sql.Open("sqlite", target+"?"+sqliteWriterParams)
	if err != nil {
		return nil, nil, fmt.Errorf("taskstore: open sqlite %q: %w", target, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	// Connecting applies journal_mode=WAL, which the readers rely on.
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, nil, fmt.Errorf("taskstore: open sqlite %q: %w", target, err)
	}
	reader, err = sql.Open("sqlite", target+"?"+sqliteReaderParams)
	if err != nil {
		writer.Close()
		return nil, nil, fmt.Errorf("taskstore: open sqlite %q: %w", target, err)
	}
	reader.SetMaxOpenConns(sqliteReaders)
	reader.SetMaxIdleConns(sqliteReaders)
	return writer, reader, nil
}

// migrationOptions returns the goose dialect and options for this engine. On
// Postgres an advisory lock, keyed by the current schema, lets replicas that
// start together migrate once while separate schemas migrate independently.
func (d dialect) migrationOptions(ctx context.Context, db *sql.DB) (goose.Dialect, []goose.ProviderOption, error) {
	if d == dialectSQLite {
		return goose.DialectSQLite3, nil, nil
	}
	var schema sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return "", nil, fmt.Errorf("taskstore: read current schema: %w", err)
	}
	if !schema.Valid {
		return "", nil, errors.New("taskstore: postgres has no current schema (check search_path)")
	}
	h := fnv.New64a()
	h.Write([]byte("antler/taskstore:" + schema.String))
	locker, err := lock.NewPostgresSessionLocker(
		lock.WithLockID(int64(h.Sum64())),
		lock.WithLockTimeout(1, 300), // replicas wait up to 5 minutes for one migration
	)
	if err != nil {
		return "", nil, fmt.Errorf("taskstore: migration lock: %w", err)
	}
	return goose.DialectPostgres, []goose.ProviderOption{goose.WithSessionLocker(locker)}, nil
}

// claimSQL builds a claim: mark up to $4 rows matching where (ordered by
// order, then id) with set, and return them.
//
// SQLite runs it on its single writer connection, so one UPDATE with an IN
// subquery is atomic as written. On Postgres, concurrent statements under READ
// COMMITTED would pick the same rows and update them twice; FOR UPDATE SKIP
// LOCKED makes each claimer lock its rows (re-checking where on the latest
// row version) and pass over rows another claimer holds. The ids are collected
// into an array first so that the update is always a primary-key lookup: with
// a plain IN subquery, the planner may hash-join against a scan of the whole
// table once statistics exist, which makes a pass grow with the stored count.
func (d dialect) claimSQL(set, where, order string) string {
	pick := "SELECT id FROM mcp_tasks WHERE " + where + " ORDER BY " + order + ", id LIMIT $4"
	if d == dialectPostgres {
		return "UPDATE mcp_tasks SET " + set +
			" WHERE id = ANY(ARRAY(" + pick + " FOR UPDATE SKIP LOCKED))" +
			" RETURNING " + taskColumns
	}
	return "UPDATE mcp_tasks SET " + set + " WHERE id IN (" + pick + ") RETURNING " + taskColumns
}

// tokenSQL is an expression giving every claimed row its own random
// 32-hex-digit lease token.
func (d dialect) tokenSQL() string {
	if d == dialectPostgres {
		return "replace(gen_random_uuid()::text, '-', '')"
	}
	return "lower(hex(randomblob(16)))"
}

// isDuplicateRemote reports whether err is a violation of the unique
// (user_id, server_name, remote_task_id) constraint, and not of any other.
func (d dialect) isDuplicateRemote(err error) bool {
	if d == dialectPostgres {
		var pgErr *pgconn.PgError
		return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == uniqueRemoteConstraint
	}
	var sqErr *sqlite.Error
	return errors.As(err, &sqErr) && sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE &&
		strings.Contains(sqErr.Error(), sqliteUniqueRemoteColumns)
}

// damaged turns an SQLite "corrupt" or "not a database" error met while
// opening the file at path into ErrDamaged with what to do about it; other
// errors are returned as they are.
func (d dialect) damaged(path string, err error) error {
	var sqErr *sqlite.Error
	if d != dialectSQLite || !errors.As(err, &sqErr) {
		return err
	}
	if c := sqErr.Code() & 0xff; c != sqlite3.SQLITE_CORRUPT && c != sqlite3.SQLITE_NOTADB {
		return err
	}
	return fmt.Errorf("%w: %q (%w); restore it from a backup, or move it aside to start with an empty task store", ErrDamaged, path, sqErr)
}
