package taskstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Catalog entry states.
const (
	CatalogApproved = "approved"
	CatalogPending  = "pending"
)

// CatalogEntry is one tool definition of a server in the tool catalog.
type CatalogEntry struct {
	Server, Tool string
	// State is CatalogApproved or CatalogPending.
	State       string
	Fingerprint string
	// Definition is the tool's canonical JSON (name, description, schemas).
	Definition []byte
	FirstSeen  time.Time
	// DecidedAt and DecidedBy are the approval's (zero while pending, and
	// for a definition approved on first sight DecidedBy is "").
	DecidedAt time.Time
	DecidedBy string
}

// CatalogEntries returns the catalog's entries of server ("" for every
// server), ordered by server, tool and state.
func (s *Store) CatalogEntries(ctx context.Context, server string) ([]CatalogEntry, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT server_name, tool_name, state, fingerprint, definition, first_seen_at, decided_at, decided_by
 FROM tool_catalog WHERE ($1 = '' OR server_name = $1) ORDER BY server_name, tool_name, state`, server)
	if err != nil {
		return nil, fmt.Errorf("taskstore: catalog: %w", err)
	}
	defer rows.Close()
	var out []CatalogEntry
	for rows.Next() {
		var (
			e       CatalogEntry
			def     string
			first   int64
			decided sql.NullInt64
			by      sql.NullString
		)
		if err := rows.Scan(&e.Server, &e.Tool, &e.State, &e.Fingerprint, &def, &first, &decided, &by); err != nil {
			return nil, fmt.Errorf("taskstore: catalog: %w", err)
		}
		e.Definition, e.FirstSeen, e.DecidedBy = []byte(def), time.UnixMilli(first).UTC(), by.String
		if decided.Valid {
			e.DecidedAt = time.UnixMilli(decided.Int64).UTC()
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("taskstore: catalog: %w", err)
	}
	return out, nil
}

// RecordCatalog writes entries in one transaction: an approved entry
// replaces the approved row of its tool (with its pending one removed when
// the fingerprints match), a pending entry replaces the tool's pending row
// unless the fingerprint is the same (whose first sighting is kept). It
// reports how many pending entries were new.
func (s *Store) RecordCatalog(ctx context.Context, entries []CatalogEntry) (newPending int, err error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("taskstore: catalog: %w", err)
	}
	defer tx.Rollback()
	for _, e := range entries {
		switch e.State {
		case CatalogApproved, CatalogPending:
		default:
			return 0, fmt.Errorf("taskstore: catalog entry %s/%s: state %q is not approved or pending", e.Server, e.Tool, e.State)
		}
		var same int
		err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM tool_catalog WHERE server_name = $1 AND tool_name = $2 AND state = $3 AND fingerprint = $4`,
			e.Server, e.Tool, e.State, e.Fingerprint).Scan(&same)
		if err != nil {
			return 0, fmt.Errorf("taskstore: catalog: %w", err)
		}
		if same > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM tool_catalog WHERE server_name = $1 AND tool_name = $2 AND state = $3`, e.Server, e.Tool, e.State); err != nil {
			return 0, fmt.Errorf("taskstore: catalog: %w", err)
		}
		var decided any
		if !e.DecidedAt.IsZero() {
			decided = e.DecidedAt.UnixMilli()
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO tool_catalog (server_name, tool_name, state, fingerprint, definition, first_seen_at, decided_at, decided_by)
 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, e.Server, e.Tool, e.State, e.Fingerprint, string(e.Definition), e.FirstSeen.UnixMilli(), decided, nullText(e.DecidedBy)); err != nil {
			return 0, fmt.Errorf("taskstore: catalog: %w", err)
		}
		if e.State == CatalogPending {
			newPending++
		}
	}
	return newPending, tx.Commit()
}

// ErrNothingPending is returned by ApproveCatalog when none of the named
// tools has a pending definition.
var ErrNothingPending = errors.New("taskstore: no pending tool definition to approve")

// ApproveCatalog makes the pending definitions of server's tools (every
// pending one when tools is empty) the approved ones, recording by and at,
// and returns the tools approved.
func (s *Store) ApproveCatalog(ctx context.Context, server string, tools []string, by string, at time.Time) ([]string, error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("taskstore: catalog: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT tool_name FROM tool_catalog WHERE server_name = $1 AND state = 'pending' ORDER BY tool_name`, server)
	if err != nil {
		return nil, fmt.Errorf("taskstore: catalog: %w", err)
	}
	want := map[string]bool{}
	for _, t := range tools {
		want[t] = true
	}
	var approve []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return nil, fmt.Errorf("taskstore: catalog: %w", err)
		}
		if len(want) == 0 || want[t] {
			approve = append(approve, t)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("taskstore: catalog: %w", err)
	}
	if len(approve) == 0 {
		return nil, ErrNothingPending
	}
	for _, t := range approve {
		if _, err := tx.ExecContext(ctx, `DELETE FROM tool_catalog WHERE server_name = $1 AND tool_name = $2 AND state = 'approved'`, server, t); err != nil {
			return nil, fmt.Errorf("taskstore: catalog: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tool_catalog SET state = 'approved', decided_at = $3, decided_by = $4
 WHERE server_name = $1 AND tool_name = $2 AND state = 'pending'`, server, t, at.UnixMilli(), nullText(by)); err != nil {
			return nil, fmt.Errorf("taskstore: catalog: %w", err)
		}
	}
	return approve, tx.Commit()
}
