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

// SQLite connection settings: WAL so readers never
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

// claimDueSQL builds the poll claim ($1 owner, $2 lease expiry, $3 now, $4
// limit, $5 the most live poll leases one user may hold afterwards, $6 a JSON
// array of users to leave out): a fair claim (fairClaimSQL) of the claimable
// rows due at $3, read through the partial claim index, never the history.
// Every row a poll holds stays in that range, since a claim never moves
// next_poll_at. The bound means a user whose polls hang cannot take more than
// $5 of the pool.
func (d dialect) claimDueSQL() string {
	return d.fairClaimSQL(fairClaim{
		set:     claimDueSet(d),
		due:     claimableDueWhere(),
		dueAt:   "next_poll_at",
		expires: "lease_expires_at",
		users:   " AND " + d.notAmongUsers("$6"),
		maxRank: "$5",
	})
}

// claimNotifySQL builds the notification claim ($1 owner, $2 lease expiry,
// $3 now, $4 limit): a fair claim (fairClaimSQL) of the undelivered events due
// at $3, read through the notification status indexes, never the history. It
// has no per-user bound: a pass waits for all of its deliveries (each cut off
// inside the lease), so a user's hung deliveries hold no worker another's
// could have had.
func (d dialect) claimNotifySQL() string {
	return d.fairClaimSQL(fairClaim{
		set:     claimNotifySet(d),
		due:     dueNotifyWhere,
		dueAt:   "COALESCE(next_notification_at, 0)",
		expires: "notification_lease_expires_at",
	})
}

// fairClaim is what differs between the claims taken round-robin by user.
type fairClaim struct {
	set     string // the SET list of a claimed row ($1 owner, $2 expiry, $3 now)
	due     string // the rows due at $3, leased or not: a live lease must stay in them
	dueAt   string // the due time, the order within a user
	expires string // the lease's expiry column
	users   string // a condition on user_id to rank only some users' rows, from " AND ", or ""
	maxRank string // the most live leases one user may hold afterwards, or "" for no bound
}

// fairClaimSQL builds a claim of up to $4 rows taken round-robin by user:
// each due row is ranked within its user after that user's live leases, and
// the free rows (ranked at most maxRank) are taken by rank, then due time. A
// user with 300 due rows thus gets the same share of a claim as a user with
// one, and a user with work in flight waits behind one without.
//
// On Postgres a window query cannot lock rows, so the ranked candidates
// (twice the limit, to spare rows a concurrent claimer just took) are locked
// FOR UPDATE SKIP LOCKED in rank order and re-checked against due and a free
// lease on their latest version before the update, as in claimSQL.
func (d dialect) fairClaimSQL(c fairClaim) string {
	free := "(" + c.expires + " IS NULL OR " + c.expires + " < $3)"
	ranked := "SELECT id, " + c.dueAt + " AS due, ROW_NUMBER() OVER (PARTITION BY user_id" +
		" ORDER BY CASE WHEN " + c.expires + " >= $3 THEN 0 ELSE 1 END, " + c.dueAt + ", id) AS user_rank," +
		" " + c.expires + " AS held_until FROM mcp_tasks WHERE " + c.due + c.users
	bound := ""
	if c.maxRank != "" {
		bound = " AND user_rank <= " + c.maxRank
	}
	candidates := "SELECT id AS cid, due, user_rank FROM (" + ranked + ") ranked" +
		" WHERE (held_until IS NULL OR held_until < $3)" + bound +
		" ORDER BY user_rank, due, cid LIMIT "
	if d == dialectPostgres {
		return "UPDATE mcp_tasks SET " + c.set +
			" WHERE id = ANY(ARRAY(SELECT id FROM mcp_tasks JOIN (" + candidates + "2 * $4) candidates ON id = cid" +
			" WHERE " + c.due + " AND " + free + " ORDER BY user_rank, due, cid LIMIT $4 FOR UPDATE OF mcp_tasks SKIP LOCKED))" +
			" RETURNING " + taskColumns
	}
	return "UPDATE mcp_tasks SET " + c.set + " WHERE id IN (SELECT cid FROM (" + candidates + "$4))" +
		" RETURNING " + taskColumns
}

// notAmongUsers is a condition that user_id is not in the JSON array of
// strings bound to param.
func (d dialect) notAmongUsers(param string) string {
	if d == dialectPostgres {
		return "user_id NOT IN (SELECT jsonb_array_elements_text(CAST(" + param + " AS jsonb)))"
	}
	return "user_id NOT IN (SELECT value FROM json_each(" + param + "))"
}

// lockUser serialises the transactions that count and reserve one user's
// task slots. SQLite's single writer, with IMMEDIATE transactions, already
// runs them one at a time; Postgres takes a transaction-scoped advisory lock
// keyed by the user (a hash collision only serialises two users).
func (d dialect) lockUser(ctx context.Context, tx *sql.Tx, userID string) error {
	if d == dialectSQLite {
		return nil
	}
	h := fnv.New64a()
	h.Write([]byte("antler/taskstore/user-slots:" + userID))
	_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64()))
	return err
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
