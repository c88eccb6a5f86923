// Package audit writes Antler's audit stream: one JSON object per line, to
// a file or stderr, apart from the operational log. It records what a
// security review asks after: every config mutation (who, what changed,
// masked), every stdio launch (server, command, the user and thread it
// serves), every plugin load, every durable task's lifecycle change and
// every denied call.
//
// Every method is safe on a nil *Logger and does nothing, so a package
// takes a *Logger in its options and an embedder that wants no audit
// passes none. Records never hold a secret: values a record carries are
// names (servers, fields, plugin entries), identities and statuses; config
// changes name the fields that changed, never their values.
package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Event names, the "event" field of each record.
const (
	EventConfigChange = "config.change"
	EventStdioLaunch  = "stdio.launch"
	EventPluginLoad   = "plugin.load"
	EventTask         = "task"
	EventCallDenied   = "call.denied"
	EventCatalogDrift = "catalog.drift"
	EventCatalogOK    = "catalog.approve"
)

// Logger writes audit records. Create it with New or Open.
type Logger struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	now    func() time.Time
	// failed is the first write error, reported once on stderr: an audit
	// stream that cannot be written must not stop the host, and must not
	// go unnoticed.
	failed bool
}

// New writes records to w.
func New(w io.Writer) *Logger { return &Logger{w: w, now: time.Now} }

// Open opens the audit stream target names: "" is none (nil), "stderr"
// the process's stderr, anything else a file appended to (created 0600).
func Open(target string) (*Logger, error) {
	switch target {
	case "":
		return nil, nil
	case "stderr":
		return New(os.Stderr), nil
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	l := New(f)
	l.closer = f
	return l, nil
}

// Close closes the file Open opened.
func (l *Logger) Close() error {
	if l == nil || l.closer == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closer.Close()
}

// ServerChange is one server's change in a config mutation: added,
// removed or updated, with the fields that differ (dotted paths, such as
// env.API_KEY or enabled) — never their values.
type ServerChange struct {
	Server string   `json:"server"`
	Change string   `json:"change"`
	Fields []string `json:"fields,omitempty"`
}

// Server change kinds.
const (
	ChangeAdded   = "added"
	ChangeRemoved = "removed"
	ChangeUpdated = "updated"
)

// ConfigChange records a config mutation by actor (the principal's user
// id) through action (the API operation, e.g. "PUT /api/mcp/config").
func (l *Logger) ConfigChange(actor, action, path string, changes []ServerChange) {
	l.write(map[string]any{"event": EventConfigChange, "actor": actor, "action": action, "config_path": path, "changes": changes})
}

// StdioLaunch records a stdio child started for server to serve user's
// thread, with the command it runs (its arguments are configuration that
// may hold secrets, so only their count is recorded).
func (l *Logger) StdioLaunch(server, command string, args int, user, thread, workspace string) {
	r := map[string]any{"event": EventStdioLaunch, "server": server, "command": command, "args": args, "user": user, "thread": thread}
	if workspace != "" {
		r["workspace"] = workspace
	}
	l.write(r)
}

// PluginLoad records a plugin loaded from the configuration entry entry
// (e.g. mcpInterceptors[0]) as role (interceptor or driver).
func (l *Logger) PluginLoad(entry, role, kind, path, sha256 string) {
	l.write(map[string]any{"event": EventPluginLoad, "entry": entry, "role": role, "kind": kind, "path": path, "sha256": sha256})
}

// Task is one durable task lifecycle change: a submit (From ""), a status
// change, a cancel request, an answer recorded or delivered.
type Task struct {
	ID, User, Thread, Server, Driver string
	// Change is what happened: "created", "status", "cancel_requested",
	// "answer_recorded", "answer_delivered", "answer_refused",
	// "answer_abandoned".
	Change string
	// From and To are the statuses around the change.
	From, To string
}

// TaskChange records a task lifecycle change.
func (l *Logger) TaskChange(t Task) {
	r := map[string]any{"event": EventTask, "change": t.Change, "task_id": t.ID, "user": t.User, "thread": t.Thread, "server": t.Server, "driver": t.Driver}
	if t.From != "" {
		r["from"] = t.From
	}
	if t.To != "" {
		r["to"] = t.To
	}
	l.write(r)
}

// CallDenied records a call refused before it reached its server: by
// which layer (a credential layer or a plugin, as the denial names it), and
// the model-safe message the caller got.
func (l *Logger) CallDenied(server, tool, user, thread, by, message string) {
	l.write(map[string]any{"event": EventCallDenied, "server": server, "tool": tool, "user": user, "thread": thread, "by": by, "message": message})
}

// CatalogDrift records a server's tool whose definition differs from the
// approved catalog (change: added or changed), under policy.
func (l *Logger) CatalogDrift(server, tool, change, policy string) {
	l.write(map[string]any{"event": EventCatalogDrift, "server": server, "tool": tool, "change": change, "policy": policy})
}

// CatalogApprove records an admin's approval of a tool's pending definition.
func (l *Logger) CatalogApprove(actor, server, tool string) {
	l.write(map[string]any{"event": EventCatalogOK, "actor": actor, "server": server, "tool": tool})
}

func (l *Logger) write(r map[string]any) {
	if l == nil {
		return
	}
	r["time"] = l.now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(r)
	if err != nil {
		return // every value is a string, a number or a list of them
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(b); err != nil && !l.failed {
		l.failed = true
		fmt.Fprintf(os.Stderr, "antler: audit log write failed, records are being lost: %v\n", err)
	}
}
