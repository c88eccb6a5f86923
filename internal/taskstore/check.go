package taskstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Health is what Check found: which engine, whether the database exists yet,
// and its schema version against the one this build migrates to.
type Health struct {
	// Engine is "sqlite" or "postgres".
	Engine string
	// Exists is false for a SQLite file not created yet (the first open
	// creates it); a Postgres database always exists once reachable.
	Exists bool
	// Version is the schema version recorded in the database (0 for none);
	// Target is the newest this build knows.
	Version, Target int64
}

// ErrNewerSchema is returned by Check for a database migrated by a newer
// build: this one would not understand its rows.
var ErrNewerSchema = errors.New("taskstore: the database schema is newer than this build")

// Check connects to the store at dsn and reads its schema version without
// changing anything: no file is created, no migration runs. It is for
// operators' preflight checks; Open is what serving uses.
func Check(ctx context.Context, dsn string) (Health, error) {
	d, target, err := parseDSN(dsn)
	if err != nil {
		return Health{}, err
	}
	h := Health{Engine: d.String()}
	if d == dialectSQLite {
		if _, err := os.Stat(target); errors.Is(err, fs.ErrNotExist) {
			return h, nil
		} else if err != nil {
			return h, fmt.Errorf("taskstore: sqlite %q: %w", target, err)
		}
	}
	h.Exists = true
	write, read, err := d.open(ctx, target)
	if err != nil {
		return h, d.damaged(target, err)
	}
	defer func() {
		write.Close()
		if read != write {
			read.Close()
		}
	}()
	p, err := d.migrations(ctx, write)
	if err != nil {
		return h, err
	}
	h.Version, h.Target, err = p.GetVersions(ctx)
	if err != nil {
		return h, d.damaged(target, fmt.Errorf("taskstore: read schema version: %w", err))
	}
	if h.Version > h.Target {
		return h, fmt.Errorf("%w: version %d, this build knows %d", ErrNewerSchema, h.Version, h.Target)
	}
	return h, nil
}
