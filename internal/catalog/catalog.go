// Package catalog pins each server's tool list against silent change. The
// first time a server is seen its tools (names, descriptions, schemas) are
// recorded as approved; a later discovery whose definitions differ records
// the changed and new tools as pending, and the server's tool_catalog
// policy decides what is served: warn serves them and reports the drift,
// hold serves only approved definitions until an admin approves, off
// records nothing. An upstream that rewrites a tool's description or schema
// can redirect an agent; this makes that visible, and with hold, inert.
package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/antler-mcp/antler/internal/audit"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/metrics"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/upstream"
)

// Store keeps the catalog (taskstore.Store on SQLite or Postgres, so
// replicas share one approval).
type Store interface {
	CatalogEntries(ctx context.Context, server string) ([]taskstore.CatalogEntry, error)
	RecordCatalog(ctx context.Context, entries []taskstore.CatalogEntry) (int, error)
	ApproveCatalog(ctx context.Context, server string, tools []string, by string, at time.Time) ([]string, error)
}

var _ Store = (*taskstore.Store)(nil)

// ErrNothingPending is returned by Approve when no named tool is pending.
var ErrNothingPending = taskstore.ErrNothingPending

// Options are a Catalog's collaborators; all may be nil.
type Options struct {
	Now     func() time.Time
	Logger  *slog.Logger
	Audit   *audit.Logger
	Metrics *metrics.Metrics
}

// Catalog is safe for concurrent use.
type Catalog struct {
	store   Store
	now     func() time.Time
	log     *slog.Logger
	audit   *audit.Logger
	metrics *metrics.Metrics
}

// New returns a catalog over store.
func New(store Store, opts Options) *Catalog {
	c := &Catalog{store: store, now: opts.Now, log: opts.Logger, audit: opts.Audit, metrics: opts.Metrics}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

// seenMarker is the tool name (and fingerprint) of the approved row that
// records a server as seen; no MCP tool has an empty name.
const seenMarker = ""

// definition is what a fingerprint covers: the fields an agent reads.
type definition struct {
	Name         string `json:"name"`
	Description  string `json:"description,omitempty"`
	InputSchema  any    `json:"inputSchema,omitempty"`
	OutputSchema any    `json:"outputSchema,omitempty"`
}

// canonical returns t's definition as canonical JSON (object keys sorted,
// no insignificant space: a re-ordering of keys is not a change) and its
// fingerprint.
func canonical(t upstream.Tool) ([]byte, string) {
	d := definition{Name: t.Name, Description: t.Description, InputSchema: schema(t.InputSchema), OutputSchema: schema(t.OutputSchema)}
	b, _ := json.Marshal(d) // every value came from JSON
	sum := sha256.Sum256(b)
	return b, hex.EncodeToString(sum[:])
}

func schema(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw) // kept as text: still fingerprinted byte for byte
	}
	return v
}

// Verdict is what Pin decided for one discovery of a server.
type Verdict struct {
	// Served are the tools to serve, in the server's order.
	Served []upstream.Tool
	// Drifted names the tools whose definitions are not the approved ones
	// (changed or new), in the server's order.
	Drifted []string
	// Held names the drifted tools hidden by the hold policy.
	Held []string
}

// Pin checks tools, a discovery of server, against the catalog under
// policy (config.ToolCatalogWarn, Hold or Off). A server seen for the
// first time has its tools approved as they are. With the store failing,
// warn serves every tool (and the error is returned for the log) and hold
// serves none: it fails closed.
func (c *Catalog) Pin(ctx context.Context, server, policy string, tools []upstream.Tool) (Verdict, error) {
	all := Verdict{Served: tools}
	if c == nil || policy == config.ToolCatalogOff {
		return all, nil
	}
	hold := policy == config.ToolCatalogHold
	entries, err := c.store.CatalogEntries(ctx, server)
	if err != nil {
		if hold {
			return Verdict{}, fmt.Errorf("tool catalog unavailable, tool_catalog hold serves no tools: %w", err)
		}
		return all, fmt.Errorf("tool catalog unavailable: %w", err)
	}
	approved, pending := map[string]string{}, map[string]string{}
	for _, e := range entries {
		if e.State == taskstore.CatalogApproved {
			approved[e.Tool] = e.Fingerprint
		} else {
			pending[e.Tool] = e.Fingerprint
		}
	}
	now := c.now()
	// A server is seen for the first time when the catalog holds nothing of
	// it, not even its marker: a server first listing no tools is still
	// seen, so tools it adds later are drift, not a first sight.
	firstSight := len(entries) == 0
	var (
		record []taskstore.CatalogEntry
		fresh  []string // drifted tools whose definition was not pending yet
		v      Verdict
	)
	if firstSight {
		record = append(record, taskstore.CatalogEntry{Server: server, Tool: seenMarker, State: taskstore.CatalogApproved,
			Fingerprint: seenMarker, Definition: []byte("{}"), FirstSeen: now, DecidedAt: now})
	}
	for _, t := range tools {
		def, fp := canonical(t)
		switch {
		case firstSight:
			record = append(record, taskstore.CatalogEntry{Server: server, Tool: t.Name, State: taskstore.CatalogApproved,
				Fingerprint: fp, Definition: def, FirstSeen: now, DecidedAt: now})
			v.Served = append(v.Served, t)
		case approved[t.Name] == fp:
			v.Served = append(v.Served, t)
		default:
			record = append(record, taskstore.CatalogEntry{Server: server, Tool: t.Name, State: taskstore.CatalogPending,
				Fingerprint: fp, Definition: def, FirstSeen: now})
			v.Drifted = append(v.Drifted, t.Name)
			if pending[t.Name] != fp {
				fresh = append(fresh, t.Name)
			}
			if hold {
				v.Held = append(v.Held, t.Name)
			} else {
				v.Served = append(v.Served, t)
			}
		}
	}
	if len(record) == 0 {
		return v, nil
	}
	if _, err := c.store.RecordCatalog(ctx, record); err != nil {
		if hold {
			return Verdict{}, fmt.Errorf("tool catalog unavailable, tool_catalog hold serves no tools: %w", err)
		}
		return v, fmt.Errorf("tool catalog not recorded: %w", err)
	}
	if len(fresh) > 0 {
		for _, name := range fresh {
			c.audit.CatalogDrift(server, name, changeOf(approved, name), policy)
			c.metrics.CatalogDrift(server)
		}
		c.log.Warn("MCP server's tools differ from the approved catalog", "server", server, "tools", v.Drifted, "policy", policy)
	}
	return v, nil
}

func changeOf(approved map[string]string, tool string) string {
	if _, ok := approved[tool]; ok {
		return ChangeChanged
	}
	return ChangeAdded
}

// Kinds of pending change.
const (
	ChangeAdded   = "added"
	ChangeChanged = "changed"
)

// Change is one pending tool definition with what it would replace.
type Change struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Change is ChangeAdded (no approved definition) or ChangeChanged.
	Change string `json:"change"`
	// Fields names what differs from the approved definition
	// (description, inputSchema, outputSchema); empty for an added tool.
	Fields    []string        `json:"fields,omitempty"`
	Approved  json.RawMessage `json:"approved"`
	Proposed  json.RawMessage `json:"proposed"`
	FirstSeen time.Time       `json:"first_seen_at"`
}

// Pending lists the pending changes of every server, by server and tool.
func (c *Catalog) Pending(ctx context.Context) ([]Change, error) {
	entries, err := c.store.CatalogEntries(ctx, "")
	if err != nil {
		return nil, err
	}
	approved := map[[2]string]taskstore.CatalogEntry{}
	for _, e := range entries {
		if e.State == taskstore.CatalogApproved {
			approved[[2]string{e.Server, e.Tool}] = e
		}
	}
	out := []Change{}
	for _, e := range entries {
		if e.State != taskstore.CatalogPending || e.Tool == seenMarker {
			continue
		}
		ch := Change{Server: e.Server, Tool: e.Tool, Change: ChangeAdded, Approved: json.RawMessage("null"), Proposed: e.Definition, FirstSeen: e.FirstSeen}
		if a, ok := approved[[2]string{e.Server, e.Tool}]; ok {
			ch.Change, ch.Approved, ch.Fields = ChangeChanged, a.Definition, differing(a.Definition, e.Definition)
		}
		out = append(out, ch)
	}
	return out, nil
}

// differing names the top-level fields of two definitions that differ.
func differing(a, b []byte) []string {
	var x, y map[string]json.RawMessage
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return nil
	}
	var out []string
	for _, f := range []string{"name", "description", "inputSchema", "outputSchema"} {
		if string(x[f]) != string(y[f]) {
			out = append(out, f)
		}
	}
	return out
}

// Approve makes the pending definitions of server's tools (all of them
// when tools is empty) the approved ones, by the admin by, and returns the
// tools approved. The caller rebuilds the tool set so held tools appear.
func (c *Catalog) Approve(ctx context.Context, server string, tools []string, by string) ([]string, error) {
	done, err := c.store.ApproveCatalog(ctx, server, tools, by, c.now())
	if errors.Is(err, taskstore.ErrNothingPending) {
		return nil, ErrNothingPending
	}
	if err != nil {
		return nil, err
	}
	for _, t := range done {
		c.audit.CatalogApprove(by, server, t)
	}
	if len(tools) > 0 && len(done) < len(tools) {
		missing := slices.DeleteFunc(slices.Clone(tools), func(t string) bool { return slices.Contains(done, t) })
		c.log.Info("tool catalog approval named tools with nothing pending", "server", server, "tools", missing)
	}
	return done, nil
}
