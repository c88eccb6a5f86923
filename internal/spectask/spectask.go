// Package spectask serves Antler's durable tasks in the shapes of the MCP
// Tasks specs: the 2025-11-25 Tasks utility (tasks/get, tasks/result,
// tasks/list, tasks/cancel, notifications/tasks/status, and a task's
// question asked on its tasks/result) and the 2026-07-28
// io.modelcontextprotocol/tasks extension (resultType "task", tasks/get with
// the result or inputRequests inlined, tasks/update, tasks/cancel,
// notifications/tasks). Answers are recorded with the task service's
// Answer, as the REST task API records them (answer.go). It holds no state
// of its own: every task is a row of the durable task store, submitted and
// polled by internal/taskservice, so a task created through the MCP endpoint is
// the same task the REST task API, the event stream and DeerFlow's host
// tools see, and it survives a restart. The package is independent of any
// MCP server library: it answers with the spec's JSON and leaves the
// JSON-RPC framing to the door.
package spectask

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// Revision is the MCP Tasks dialect a request speaks, picked by the door
// from the negotiated protocol version (and, for 2026-07-28, the client's
// declared io.modelcontextprotocol/tasks extension).
type Revision int

// The two task dialects.
const (
	// Rev20251125 is the Tasks utility of protocol 2025-11-25 (SEP-1686).
	Rev20251125 Revision = iota + 1
	// Rev20260728 is the io.modelcontextprotocol/tasks extension of
	// protocol 2026-07-28 (SEP-2663).
	Rev20260728
)

func (r Revision) String() string {
	switch r {
	case Rev20251125:
		return "2025-11-25"
	case Rev20260728:
		return "2026-07-28"
	}
	return "Revision(" + strconv.Itoa(int(r)) + ")"
}

// Caller is who asks: the authenticated principal's user, the thread the
// request belongs to (a submit's task lives in it; other methods find the
// user's tasks in every thread) and the request's per-request secrets
// (headers_from_context, applied to submit only and never stored).
type Caller struct {
	UserID   string
	ThreadID string
	Secrets  map[string]string
}

// Errors callers branch on. The door answers ErrNotFound and
// ErrInvalidParams with JSON-RPC -32602 and ErrMethodNotFound with -32601.
var (
	// ErrNotFound is an unknown task id or another principal's: the same
	// answer for both, so ids never leak across principals.
	ErrNotFound = errors.New("spectask: task not found")
	// ErrInvalidParams is a request the spec refuses: a malformed cursor
	// or ttl, or cancelling a task that already ended (2025-11-25).
	ErrInvalidParams = errors.New("spectask: invalid params")
	// ErrMethodNotFound is a method the revision does not have
	// (tasks/result and tasks/list in 2026-07-28) or an unknown revision.
	ErrMethodNotFound = errors.New("spectask: method not found in this task revision")
)

// Notification methods Watch emits.
const (
	MethodStatus20251125 = "notifications/tasks/status"
	MethodStatus20260728 = "notifications/tasks"
)

// RelatedTaskKey is the _meta key naming the task a message belongs to.
const RelatedTaskKey = "io.modelcontextprotocol/related-task"

// watchEvery is how often Result and Watch read the store: tasks are
// polled and completed by any replica, so the store is the only witness.
const watchEvery = 500 * time.Millisecond

// eventSlack re-reads this much before a watch's cursor, so an event
// recorded by a replica whose clock lags is still seen (versions already
// sent are skipped), as the REST event stream does.
const eventSlack = 5 * time.Second

const (
	defaultPageSize = 50
	eventBatch      = 100
)

// Service maps Antler's durable tasks to the MCP Tasks shapes. It is safe
// for concurrent use.
type Service struct {
	ts       *taskservice.Service
	log      *slog.Logger
	pageSize int
}

// New returns a service over the running task service ts (nil log: discard).
func New(ts *taskservice.Service, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{ts: ts, log: log, pageSize: defaultPageSize}
}

func checkRevision(rev Revision) error {
	if rev != Rev20251125 && rev != Rev20260728 {
		return fmt.Errorf("%w: %v", ErrMethodNotFound, rev)
	}
	return nil
}

// Submit creates the durable task for a task_toolset submit tool called as
// a task and returns the revision's creation result: for 2025-11-25 a
// CreateTaskResult {task: Task}, for 2026-07-28 {resultType: "task", task:
// Task}. It returns only once the row is durable, so tasks/get resolves the
// id at once. sub is the request the REST wrapper builds from the tool's
// TaskToolset; its user, thread and secrets are replaced by the caller's.
// ttl is the requested retention in milliseconds (nil: none asked); Antler
// keeps task rows without a time limit, so every task reports a null ttl,
// which the spec reads as unlimited. Submit errors are the task service's
// (a *taskstore.ActiveTaskLimitError, a *taskstore.DuplicateError, a
// driver's error), for the door to turn into a tool error result.
func (s *Service) Submit(ctx context.Context, rev Revision, c Caller, sub task.SubmitRequest, ttl *int64) (json.RawMessage, error) {
	return s.SubmitTool(ctx, rev, c, ordinary.Name, sub, ttl)
}

// SubmitTool is Submit for any durable tool: driver is the task driver
// its calls run on (tasktools.DriverName), so a tool its own server runs as
// an MCP task (either revision's dialect) is served in the caller's
// revision like a submit tool.
func (s *Service) SubmitTool(ctx context.Context, rev Revision, c Caller, driver string, sub task.SubmitRequest, ttl *int64) (json.RawMessage, error) {
	if err := checkRevision(rev); err != nil {
		return nil, err
	}
	if ttl != nil && *ttl < 0 {
		return nil, fmt.Errorf("%w: ttl must not be negative", ErrInvalidParams)
	}
	sub.UserID, sub.ThreadID, sub.Secrets = c.UserID, threadOrDefault(c.ThreadID), c.Secrets
	row, err := s.ts.Submit(ctx, driver, sub)
	if err != nil {
		return nil, err
	}
	s.log.Info("MCP task created through the MCP endpoint", "task_id", row.ID, "revision", rev.String(), "server", row.ServerName)
	if rev == Rev20260728 {
		t := s.taskOf(rev, row)
		t["resultType"] = "task"
		return marshal(t)
	}
	return marshal(map[string]any{"task": s.taskOf(rev, row)})
}

// Get answers tasks/get: for 2025-11-25 the Task; for 2026-07-28 the
// DetailedTask, with the CallToolResult inlined as result once completed,
// error when failed and inputRequests when input_required.
func (s *Service) Get(ctx context.Context, rev Revision, c Caller, taskID string) (json.RawMessage, error) {
	if err := checkRevision(rev); err != nil {
		return nil, err
	}
	row, err := s.owned(ctx, c, taskID)
	if err != nil {
		return nil, err
	}
	if rev == Rev20260728 {
		return marshal(s.detailOf(row))
	}
	return marshal(s.taskOf(rev, row))
}

// Result answers tasks/result (2025-11-25 only): it blocks until the task
// is terminal or ctx ends, then returns the CallToolResult the tool call
// stands for, with the related-task _meta. A task whose cancellation was
// asked for is cancelled at once (terminal states are final in the spec),
// and its result is an error result saying so.
func (s *Service) Result(ctx context.Context, rev Revision, c Caller, taskID string) (json.RawMessage, error) {
	return s.ResultAsking(ctx, rev, c, taskID, nil)
}

// ResultAsking is Result for a client that can be asked: while the task
// waits for input its driver can pass on, ask puts the question to the
// client (once per question) and the answer is recorded as tasks/update
// and the REST route record one; then the wait goes on until the task
// ends. An error of ask, or an answer the task service refuses as
// malformed (ErrInvalidParams), ends the wait with that error; an answer
// that lost a race with another (the task moved on) is dropped. A nil ask
// is Result.
func (s *Service) ResultAsking(ctx context.Context, rev Revision, c Caller, taskID string, ask Asker) (json.RawMessage, error) {
	if rev != Rev20251125 {
		return nil, fmt.Errorf("%w: tasks/result", ErrMethodNotFound)
	}
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	asked := map[string]bool{}
	for {
		row, err := s.owned(ctx, c, taskID)
		if err != nil {
			return nil, err
		}
		if ask != nil {
			if err := s.ask(ctx, row, asked, ask); err != nil {
				return nil, err
			}
		}
		if st := status(rev, row); st == "completed" || st == "failed" || st == "cancelled" {
			res := resultOf(row)
			if st == "cancelled" {
				res = errorResult(msgCancelled) // however the remote ended it
			}
			res["_meta"] = map[string]any{RelatedTaskKey: map[string]string{"taskId": row.ID}}
			return marshal(res)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// List answers tasks/list (2025-11-25 only): the caller's tasks in every
// thread, newest first, a page at a time; nextCursor is absent on the
// last page. A cursor this service did not hand out is ErrInvalidParams.
func (s *Service) List(ctx context.Context, rev Revision, c Caller, cursor string) (json.RawMessage, error) {
	if rev != Rev20251125 {
		return nil, fmt.Errorf("%w: tasks/list", ErrMethodNotFound)
	}
	before, beforeID, err := parseCursor(cursor)
	if err != nil {
		return nil, err
	}
	rows, err := s.ts.ListOwned(ctx, c.UserID, before, beforeID, s.pageSize)
	if err != nil {
		return nil, err
	}
	tasks := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		tasks = append(tasks, s.taskOf(rev, r))
	}
	out := map[string]any{"tasks": tasks}
	if len(rows) == s.pageSize {
		last := rows[len(rows)-1]
		out["nextCursor"] = makeCursor(last.CreatedAt, last.ID)
	}
	return marshal(out)
}

// Cancel answers tasks/cancel. The request is recorded durably and carried
// out by the task service (taskservice.ErrNotRunning while no worker
// runs). For 2025-11-25 it returns the Task, now cancelled; a task that
// already ended is ErrInvalidParams (-32602). For 2026-07-28 it returns an
// empty ack, also for a task that already ended: cancellation is
// cooperative and tasks/get shows how the task really ended.
func (s *Service) Cancel(ctx context.Context, rev Revision, c Caller, taskID string) (json.RawMessage, error) {
	if err := checkRevision(rev); err != nil {
		return nil, err
	}
	row, err := s.owned(ctx, c, taskID)
	if err != nil {
		return nil, err
	}
	if rev == Rev20251125 && terminalStatus(status(rev, row)) {
		return nil, fmt.Errorf("%w: task %s is already %s", ErrInvalidParams, row.ID, status(rev, row))
	}
	if !task.Status(row.Status).IsTerminal() {
		row, err = s.ts.Cancel(ctx, row.ID, row.Scope())
		if errors.Is(err, taskstore.ErrNotFound) {
			return nil, ErrNotFound
		}
		if err != nil {
			return nil, err
		}
		s.log.Info("MCP task cancellation requested through the MCP endpoint", "task_id", row.ID, "revision", rev.String())
	}
	if rev == Rev20260728 {
		return json.RawMessage(`{}`), nil
	}
	return marshal(s.taskOf(rev, row))
}

// Watch delivers the caller's task events from the durable outbox until
// ctx ends (it then returns nil): one emit per new event version, as
// notifications/tasks/status with the Task (2025-11-25) or
// notifications/tasks with the DetailedTask (2026-07-28). Events are what
// the outbox records: a task reaching input_required or a terminal status,
// or its tracking becoming degraded. With taskIDs (subscriptions/listen),
// only those tasks are watched and each one's current event, if it has
// one, is delivered first, so a listener that subscribes late still hears
// how the task ended; ids unknown to the caller are ignored. Without
// taskIDs every task of the caller is watched from now on. Delivery is at
// least once; emit runs on Watch's goroutine.
func (s *Service) Watch(ctx context.Context, rev Revision, c Caller, taskIDs []string, emit func(method string, params json.RawMessage)) error {
	if err := checkRevision(rev); err != nil {
		return err
	}
	var only map[string]bool
	seen := map[string]int{}
	start := time.Now()
	if len(taskIDs) > 0 {
		only = make(map[string]bool, len(taskIDs))
		for _, id := range taskIDs {
			only[id] = true
			row, err := s.ts.GetOwned(ctx, id, c.UserID)
			if errors.Is(err, taskstore.ErrNotFound) {
				continue
			}
			if err != nil {
				return s.endWatch(ctx, err)
			}
			if row.EventVersion > 0 {
				s.emit(rev, row, emit)
				seen[row.ID] = row.EventVersion
			}
		}
	} else {
		// Events recorded before the watch began are history.
		err := s.eachEvent(ctx, c.UserID, start.Add(-eventSlack), func(r taskstore.Task) {
			seen[r.ID] = r.EventVersion
		})
		if err != nil {
			return s.endWatch(ctx, err)
		}
	}
	cursor := start
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		err := s.eachEvent(ctx, c.UserID, cursor.Add(-eventSlack), func(r taskstore.Task) {
			if (only != nil && !only[r.ID]) || seen[r.ID] >= r.EventVersion {
				return
			}
			s.emit(rev, r, emit)
			seen[r.ID] = r.EventVersion
			if r.EventRecordedAt.After(cursor) {
				cursor = r.EventRecordedAt
			}
		})
		if err != nil && ctx.Err() == nil {
			s.log.Warn("MCP task watch: reading events failed; retrying", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *Service) endWatch(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (s *Service) emit(rev Revision, row taskstore.Task, emit func(string, json.RawMessage)) {
	var params map[string]any
	method := MethodStatus20251125
	if rev == Rev20260728 {
		method, params = MethodStatus20260728, s.detailOf(row)
	} else {
		params = s.taskOf(rev, row)
	}
	params["_meta"] = map[string]any{RelatedTaskKey: map[string]string{"taskId": row.ID}}
	b, err := marshal(params)
	if err != nil {
		s.log.Warn("MCP task watch: encoding an event failed", "task_id", row.ID, "error", err.Error())
		return
	}
	emit(method, b)
}

// eachEvent calls fn, oldest first, for every event of the user recorded at
// or after from, a page at a time.
func (s *Service) eachEvent(ctx context.Context, user string, from time.Time, fn func(taskstore.Task)) error {
	at, id := from, ""
	for {
		rows, err := s.ts.UserEvents(ctx, user, at, id, eventBatch)
		if err != nil {
			return err
		}
		for _, r := range rows {
			fn(r)
		}
		if len(rows) < eventBatch {
			return nil
		}
		last := rows[len(rows)-1]
		at, id = last.EventRecordedAt, last.ID
	}
}

// owned returns the caller's task by id, whatever its thread.
func (s *Service) owned(ctx context.Context, c Caller, id string) (taskstore.Task, error) {
	if id == "" || c.UserID == "" {
		return taskstore.Task{}, ErrNotFound
	}
	row, err := s.ts.GetOwned(ctx, id, c.UserID)
	if errors.Is(err, taskstore.ErrNotFound) {
		return taskstore.Task{}, ErrNotFound
	}
	return row, err
}

func threadOrDefault(thread string) string {
	if thread == "" {
		return "default"
	}
	return thread
}

// cursorPrefix versions the opaque list cursor.
const cursorPrefix = "v1:"

// makeCursor encodes a list position: the last row's creation time and id.
func makeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(at.UnixMilli(), 10) + ":" + id))
}

func parseCursor(cursor string) (time.Time, string, error) {
	if cursor == "" {
		return time.Time{}, "", nil
	}
	bad := fmt.Errorf("%w: unknown cursor", ErrInvalidParams)
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return time.Time{}, "", bad
	}
	rest, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return time.Time{}, "", bad
	}
	msText, id, ok := strings.Cut(rest, ":")
	ms, err := strconv.ParseInt(msText, 10, 64)
	if !ok || err != nil || ms <= 0 || id == "" {
		return time.Time{}, "", bad
	}
	return time.UnixMilli(ms).UTC(), id, nil
}

// marshal encodes v without HTML escaping, so results keep their text as
// the upstream sent it.
func marshal(v any) (json.RawMessage, error) {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("spectask: encode: %w", err)
	}
	return json.RawMessage(strings.TrimSuffix(sb.String(), "\n")), nil
}
