// Package taskservice runs durable MCP tasks: it submits them through a
// driver and persists the remote handle, then, outside any agent request,
// claims due tasks under a lease, asks the driver for their status and writes
// the answer back only while the lease is still held. It is DeerFlow's
// McpTaskService over the stores in internal/taskstore.
package taskservice

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/audit"
	"github.com/antler-mcp/antler/internal/metrics"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/tracing"
)

// ErrNotRunning is returned by Cancel while no worker runs: a cancel is never
// acknowledged without something to carry it out.
var ErrNotRunning = errors.New("the MCP task runtime is not running")

// compensationTimeout bounds the best-effort remote cancel after a failed submit.
const compensationTimeout = 30 * time.Second

// Options configure a Service.
type Options struct {
	Store   *taskstore.Store
	Drivers *task.Registry
	Config  task.Config
	Logger  *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Owner names this process in leases (default "<hostname>:<random>").
	Owner string
	// Notifier delivers task events (nil: events stay pending in the
	// outbox, visible through the API and the events stream).
	Notifier tasknotify.Notifier
	// Metrics, when set, records poll latency and delivery outcomes, and
	// reads its task gauges from Store at each scrape.
	Metrics *metrics.Metrics
	// Audit, when set, records every task lifecycle change.
	Audit *audit.Logger
	// Tracer, when set, keeps each submit's trace context with its task
	// and traces every background poll, cancellation and notification
	// delivery as a trace of its own linked to the submit; nil is tracing
	// off.
	Tracer *tracing.Tracer
}

// Service is safe for concurrent use.
type Service struct {
	store   *taskstore.Store
	drivers *task.Registry
	cfg     task.Config
	log     *slog.Logger
	now     func() time.Time
	owner   string

	notifier tasknotify.Notifier
	metrics  *metrics.Metrics
	audit    *audit.Logger
	tracer   *tracing.Tracer

	// polling maps the id of each task polled now to the cancel func of its
	// poll's context.
	polling sync.Map

	running atomic.Bool
	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
}

// New returns a service; Start runs its loop.
func New(opts Options) *Service {
	s := &Service{store: opts.Store, drivers: opts.Drivers, cfg: opts.Config, log: opts.Logger, now: opts.Now, owner: opts.Owner, notifier: opts.Notifier, metrics: opts.Metrics, audit: opts.Audit, tracer: opts.Tracer}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.owner == "" {
		host, _ := os.Hostname()
		var b [8]byte
		_, _ = rand.Read(b[:])
		s.owner = host + ":" + hex.EncodeToString(b[:])
	}
	if s.store != nil {
		s.metrics.SetTaskStats(func(ctx context.Context) (metrics.TaskStats, error) {
			st, err := s.store.Stats(ctx)
			byStatus := make(map[string]int, len(st.ByStatus))
			for status, n := range st.ByStatus {
				byStatus[string(status)] = n
			}
			return metrics.TaskStats{ByStatus: byStatus, Degraded: st.Degraded, AnswersPending: st.AnswersPending}, err
		})
	}
	return s
}

// Owner is this service's lease owner id.
func (s *Service) Owner() string { return s.owner }

// Running reports whether the background loop runs.
func (s *Service) Running() bool { return s.running.Load() }

// Start runs the background work until Stop: a worker pool of
// max_concurrent_polls polls and another of as many cancellations, which
// claim due tasks as workers free up (first at once, so expired leases
// recover at start-up), and a notification pass every poll interval. The
// three run apart, so hung cancels delay neither polls nor deliveries.
func (s *Service) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	s.running.Store(true)
	var wg sync.WaitGroup
	wg.Go(func() { s.workerPool(ctx, s.pollWork()) })
	wg.Go(func() { s.workerPool(ctx, s.cancelWork()) })
	wg.Go(func() {
		t := time.NewTicker(s.cfg.PollInterval())
		defer t.Stop()
		for {
			if err := s.runNotifications(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("MCP task notification pass failed; retrying next interval", "error", err.Error())
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	go func() {
		wg.Wait()
		close(s.done)
	}()
}

// work is one kind of leased background work a workerPool runs.
type work struct {
	name   string // "poll" or "cancellation", for logs
	cancel bool   // the lease kind, for Store.ReturnClaim
	// claim leases up to limit due tasks of users not in except.
	claim func(ctx context.Context, limit int, except []string) ([]taskstore.Task, error)
	run   func(ctx context.Context, row taskstore.Task)
}

func (s *Service) pollWork() work {
	return work{name: "poll",
		claim: func(ctx context.Context, limit int, except []string) ([]taskstore.Task, error) {
			return s.store.ClaimDueExcept(ctx, s.now(), s.owner, s.cfg.Lease(), limit, s.cfg.PollShare(), except)
		},
		run: s.pollCancellable}
}

func (s *Service) cancelWork() work {
	return work{name: "cancellation", cancel: true,
		claim: func(ctx context.Context, limit int, except []string) ([]taskstore.Task, error) {
			return s.store.ClaimCancelRequestsExcept(ctx, s.now(), s.owner, s.cfg.Lease(), limit, except)
		},
		run: s.cancelGuarded}
}

// workerPool runs max_concurrent_polls workers of one kind. It claims at
// most as many due tasks as it has idle workers, leaving out the users whose
// work it already runs up to their PollShare, and starts each at once, so a
// claim's lease runs from the moment its work starts. It claims again
// whenever a worker frees up and on every poll interval, never waiting for a
// batch: one slow or hung call holds only its own worker, until its budget
// ends it. The per-user count is this process's own, not the store's leases:
// a cancel request clears a poll's lease while its status call may still
// run, and that call still holds a worker. A claimed row of a user who
// reached the share within the same claim is handed back unused.
func (s *Service) workerPool(ctx context.Context, w work) {
	n, share := s.cfg.MaxConcurrentPolls, s.cfg.PollShare()
	freed := make(chan string, n)
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(s.cfg.PollInterval())
	defer tick.Stop()
	busy, perUser, claim := 0, map[string]int{}, true
	for ctx.Err() == nil {
		again := false
		if claim && busy < n {
			var except []string
			for user, c := range perUser {
				if c >= share {
					except = append(except, user)
				}
			}
			rows, err := w.claim(ctx, n-busy, except)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("MCP task "+w.name+" claim failed; retrying", "error", err.Error())
			}
			for _, row := range rows {
				if perUser[row.UserID] >= share {
					if _, err := s.store.ReturnClaim(ctx, row.Lease(), w.cancel); err != nil && ctx.Err() == nil {
						s.log.Warn("returning an unused MCP task claim failed; its lease expires on its own", "task_id", row.ID, "error", err.Error())
					}
					again = true // the user is left out of the next claim
					continue
				}
				busy++
				perUser[row.UserID]++
				wg.Go(func() {
					defer func() { freed <- row.UserID }()
					w.run(ctx, row)
				})
			}
			claim = false
		}
		if again && busy < n {
			claim = true
			continue
		}
		select {
		case <-ctx.Done():
			return
		case user := <-freed:
			busy--
			if perUser[user]--; perUser[user] == 0 {
				delete(perUser, user)
			}
			claim = true
		case <-tick.C:
			claim = true
		}
	}
}

// pollCancellable polls a claimed task under a context that Cancel ends when
// the task's user cancels it in this process, so the status call gives its
// worker back at once instead of at the end of its budget.
func (s *Service) pollCancellable(ctx context.Context, row taskstore.Task) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.polling.Store(row.ID, cancel)
	defer s.polling.Delete(row.ID)
	s.pollGuarded(pctx, row)
}

// Stop ends the loop and cancels in-flight remote calls (a hung status call
// cannot block shutdown; its lease simply expires).
func (s *Service) Stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.cancel = nil
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	s.running.Store(false)
	cancel()
	<-done
}

// slotTTL bounds how long a submit in progress holds one of its user's
// active-task slots if its process dies before the submit ends.
const slotTTL = 15 * time.Minute

// Submit submits through the driver and persists the task. A user already at
// max_active_tasks_per_user is refused with a *taskstore.ActiveTaskLimitError
// before anything reaches the upstream: the slot is reserved in the store
// first, and the persisted task takes it over. If persisting fails for any
// reason but a duplicate handle, the remote task is cancelled (best effort)
// so nothing runs untracked.
func (s *Service) Submit(ctx context.Context, driverName string, req task.SubmitRequest) (taskstore.Task, error) {
	drv, err := s.drivers.Get(driverName)
	if err != nil {
		return taskstore.Task{}, err
	}
	if req.LocalTaskID == "" {
		req.LocalTaskID = task.LocalID()
	}
	if err := req.Validate(); err != nil {
		return taskstore.Task{}, err
	}
	if err := s.store.ReserveTaskSlot(ctx, req.LocalTaskID, req.UserID, s.cfg.MaxActiveTasksPerUser, s.now(), slotTTL); err != nil {
		return taskstore.Task{}, err
	}
	row, err := s.submit(ctx, drv, driverName, req)
	if err != nil {
		// The task row, had it been written, would have taken the slot over.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), compensationTimeout)
		if rerr := s.store.ReleaseTaskSlot(rctx, req.LocalTaskID); rerr != nil {
			s.log.Warn("releasing an MCP task slot failed; it expires on its own", "error", rerr.Error())
		}
		cancel()
	}
	return row, err
}

func (s *Service) submit(ctx context.Context, drv task.Driver, driverName string, req task.SubmitRequest) (taskstore.Task, error) {
	sub, err := drv.Submit(ctx, req)
	if err != nil {
		return taskstore.Task{}, err
	}
	data := map[string]string{}
	for k, v := range req.DriverData {
		data[k] = v
	}
	for k, v := range sub.DriverData {
		data[k] = v
	}
	row, err := s.persist(ctx, driverName, req, sub, data)
	if err == nil {
		return row, nil
	}
	var dup *taskstore.DuplicateError
	if !errors.As(err, &dup) && sub.RemoteTaskID != "" {
		s.compensate(drv, task.Reference{LocalTaskID: req.LocalTaskID, UserID: req.UserID, ThreadID: req.ThreadID,
			ServerName: req.ServerName, RemoteTaskID: sub.RemoteTaskID, DriverData: data})
	}
	return taskstore.Task{}, err
}

func (s *Service) persist(ctx context.Context, driverName string, req task.SubmitRequest, sub task.Submission, data map[string]string) (taskstore.Task, error) {
	if err := task.CheckRemoteTaskID(sub.RemoteTaskID); err != nil {
		return taskstore.Task{}, err
	}
	snap, err := task.Normalize(sub.State, s.cfg)
	if err != nil {
		return taskstore.Task{}, err
	}
	now := s.now()
	raw, _ := json.Marshal(data)
	if len(raw) > task.MaxDriverDataBytes {
		// The bound a later snapshot's driver data has (task.Normalize):
		// every poll, cancel and answer reads it back and sends it on.
		return taskstore.Task{}, task.Protocolf("MCP task driver_data exceeds the %d-byte limit", task.MaxDriverDataBytes)
	}
	nt := taskstore.NewTask{
		ID: req.LocalTaskID, UserID: req.UserID, ThreadID: req.ThreadID, RunID: req.RunID, ToolCallID: req.ToolCallID,
		ServerName: req.ServerName, DriverName: driverName, RemoteTaskID: sub.RemoteTaskID, TaskName: req.TaskName,
		State: toStore(snap), DriverData: raw, ActiveLimit: s.cfg.MaxActiveTasksPerUser,
	}
	if s.tracer != nil {
		nt.TraceParent, _ = s.tracer.Inject(ctx)
	}
	if next := task.NextPollAt(now, snap, s.cfg); next != nil {
		nt.NextPollAt = *next
	}
	row, err := s.store.Create(ctx, nt, now)
	if err == nil {
		s.auditTask(row, "created", "")
	}
	return row, err
}

// auditTask records a lifecycle change of row (its status after the
// change), from the status before it ("" when none or unchanged).
func (s *Service) auditTask(row taskstore.Task, change string, from task.Status) {
	s.audit.TaskChange(audit.Task{ID: row.ID, User: row.UserID, Thread: row.ThreadID, Server: row.ServerName,
		Driver: row.DriverName, Change: change, From: string(from), To: string(row.Status)})
}

func (s *Service) compensate(drv task.Driver, ref task.Reference) {
	ctx, cancel := context.WithTimeout(context.Background(), compensationTimeout)
	defer cancel()
	if _, err := drv.Cancel(ctx, ref); err != nil {
		s.log.Warn("compensating cancel of an untracked MCP task failed", "server", ref.ServerName, "error", err.Error())
		return
	}
	s.log.Info("cancelled an MCP task that could not be persisted", "server", ref.ServerName)
}

// RunOnce runs one pass: due cancellations, then due polls, then due
// notifications (each phase concurrent, each task isolated from the others).
func (s *Service) RunOnce(ctx context.Context) error {
	cerr := s.runCancellations(ctx)
	perr := s.runPolls(ctx)
	nerr := s.runNotifications(ctx)
	return errors.Join(cerr, perr, nerr)
}

// TrackingDegradedAfter is the consecutive poll failures after which a task
// is reported as tracking_degraded.
func (s *Service) TrackingDegradedAfter() int { return s.store.TrackingDegradedAfter() }

// runPolls is RunOnce's poll phase: one claim of up to max_concurrent_polls
// due tasks, polled concurrently, waited for.
func (s *Service) runPolls(ctx context.Context) error {
	rows, err := s.store.ClaimDuePerUser(ctx, s.now(), s.owner, s.cfg.Lease(), s.cfg.MaxConcurrentPolls, s.cfg.PollShare())
	if err != nil {
		return fmt.Errorf("claim due MCP tasks: %w", err)
	}
	var wg sync.WaitGroup
	for _, row := range rows {
		wg.Go(func() { s.pollGuarded(ctx, row) })
	}
	wg.Wait()
	return nil
}

// pollGuarded polls one claimed task, isolating a failure or panic to it: an
// unexpected one leaves the lease to expire for recovery.
func (s *Service) pollGuarded(ctx context.Context, row taskstore.Task) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("Unexpected MCP task poll failure; the lease will expire for recovery", "task_id", row.ID, "panic", fmt.Sprint(r))
		}
	}()
	ctx, end := s.span(ctx, SpanPoll, row)
	err := s.pollOne(ctx, row)
	end(err)
	if err != nil && ctx.Err() == nil {
		s.log.Error("Unexpected MCP task poll failure; the lease will expire for recovery", "task_id", row.ID, "error", err.Error())
	}
}

// TimeoutError is a background remote call that ran past its budget. It is
// retryable: the task is polled again after the usual backoff.
type TimeoutError struct {
	Call   string // "status" or "cancel"
	Budget time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("MCP task %s call timed out after %v", e.Call, e.Budget)
}

// boundedCall runs call with a deadline budget from now. If the call fails
// after the deadline passed (and not because ctx ended), its error becomes
// a *TimeoutError, whatever the driver made of the cancellation.
func boundedCall(ctx context.Context, what string, budget time.Duration, call func(context.Context) (task.State, error)) (task.State, error) {
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	snap, err := call(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		err = &TimeoutError{Call: what, Budget: budget}
	}
	return snap, err
}

func (s *Service) pollOne(ctx context.Context, row taskstore.Task) error {
	if row.AnswerStatus == taskstore.AnswerPending {
		return s.deliverAnswer(ctx, row)
	}
	drv, err := s.drivers.Get(row.DriverName)
	if err != nil {
		at := s.now()
		_, rerr := s.store.ReleaseClaim(ctx, row.Lease(), at.Add(task.PollBackoff(row.ConsecutivePollErrorCount, s.cfg)), err.Error(), at)
		return rerr
	}
	started := time.Now()
	snap, err := boundedCall(ctx, "status", s.cfg.StatusCallBudget(), func(ctx context.Context) (task.State, error) {
		return drv.Status(ctx, reference(row))
	})
	s.metrics.TaskPoll(row.DriverName, err, time.Since(started))
	polledAt := s.now() // the remote call's completion, not the scan
	if err == nil {
		snap, err = task.Normalize(snap, s.cfg)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return nil // shutting down: the lease expires and another pass retries
	case err != nil && task.IsPermanent(err):
		snap = task.FailedState(err.Error())
	case err != nil:
		next := polledAt.Add(task.PollBackoff(row.ConsecutivePollErrorCount, s.cfg))
		_, rerr := s.store.ReleaseClaim(ctx, row.Lease(), next, task.Truncate(err.Error(), task.MaxErrorChars), polledAt)
		return rerr
	}
	ok, err := s.store.ApplyPoll(ctx, row.Lease(), toStore(snap), driverData(snap), nextPoll(polledAt, snap, s.cfg), polledAt)
	if err != nil {
		return err
	}
	if ok && snap.Status != row.Status {
		s.auditStatus(row, snap.Status)
	}
	if !ok {
		s.log.Warn("Discarded MCP task poll result after lease ownership changed or expired", "task_id", row.ID)
	}
	return nil
}

// runCancellations is RunOnce's cancel phase: one claim of up to
// max_concurrent_polls due cancellations, run concurrently, waited for.
func (s *Service) runCancellations(ctx context.Context) error {
	rows, err := s.store.ClaimCancelRequests(ctx, s.now(), s.owner, s.cfg.Lease(), s.cfg.MaxConcurrentPolls)
	if err != nil {
		return fmt.Errorf("claim MCP task cancellations: %w", err)
	}
	var wg sync.WaitGroup
	for _, row := range rows {
		wg.Go(func() { s.cancelGuarded(ctx, row) })
	}
	wg.Wait()
	return nil
}

// cancelGuarded carries out one claimed cancellation, logging its failure.
func (s *Service) cancelGuarded(ctx context.Context, row taskstore.Task) {
	ctx, end := s.span(ctx, SpanCancel, row)
	err := s.cancelOne(ctx, row)
	end(err)
	if err != nil && ctx.Err() == nil {
		s.log.Error("MCP task cancellation failed", "task_id", row.ID, "error", err.Error())
	}
}

func (s *Service) cancelOne(ctx context.Context, row taskstore.Task) error {
	var snap task.State
	drv, err := s.drivers.Get(row.DriverName)
	if err == nil {
		// Bounded like a status call: by status_call_timeout_seconds, and by
		// the lease, since an answer after it would be fenced anyway.
		snap, err = boundedCall(ctx, "cancel", s.cfg.StatusCallBudget(), func(ctx context.Context) (task.State, error) {
			return drv.Cancel(ctx, reference(row))
		})
	}
	if err == nil {
		snap, err = task.Normalize(snap, s.cfg)
	}
	if err == nil && !snap.Status.IsTerminal() {
		err = task.NewProtocolError("MCP task cancellation must return a terminal status")
	}
	at := s.now() // backoff starts when the remote attempt ends
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		next := at.Add(task.CancelBackoff(row.CancelAttemptCount, s.cfg))
		_, rerr := s.store.ReleaseCancelClaim(ctx, row.Lease(), next, task.Truncate(err.Error(), task.MaxErrorChars), at)
		return rerr
	}
	ok, err := s.store.ApplyCancelState(ctx, row.Lease(), toStore(snap), at)
	if err == nil && ok && snap.Status != row.Status {
		s.auditStatus(row, snap.Status)
	}
	if err == nil && !ok {
		s.log.Warn("Discarded MCP task cancellation result after lease ownership changed or expired", "task_id", row.ID)
	}
	return err
}

// Cancel records a cancel request for the caller's own task; the first
// request fences any poll in flight, and ends its status call if this
// process runs it. It returns once the request is durable,
// and refuses while no worker runs.
func (s *Service) Cancel(ctx context.Context, id string, sc task.Scope) (taskstore.Task, error) {
	if !s.Running() {
		return taskstore.Task{}, ErrNotRunning
	}
	row, err := s.store.RequestCancel(ctx, id, sc, s.now())
	if err == nil {
		s.auditTask(row, "cancel_requested", "")
		if stop, ok := s.polling.Load(id); ok {
			stop.(context.CancelFunc)() // the request fenced the poll; end its call
		}
	}
	return row, err
}

// reference is the driver's view of a stored task.
func reference(row taskstore.Task) task.Reference {
	data := map[string]string{}
	_ = json.Unmarshal(row.DriverData, &data)
	return task.Reference{LocalTaskID: row.ID, UserID: row.UserID, ThreadID: row.ThreadID,
		ServerName: row.ServerName, RemoteTaskID: row.RemoteTaskID, DriverData: data}
}

// nextPoll is task.NextPollAt as the store takes it: zero for none.
func nextPoll(at time.Time, snap task.State, cfg task.Config) time.Time {
	if n := task.NextPollAt(at, snap, cfg); n != nil {
		return *n
	}
	return time.Time{}
}

// driverData is the driver data a snapshot replaces the stored one with, as
// JSON; nil leaves the stored one.
func driverData(s task.State) json.RawMessage {
	if s.DriverData == nil {
		return nil
	}
	b, _ := json.Marshal(s.DriverData)
	return b
}

// toStore converts a normalised snapshot to the store's columns.
func toStore(s task.State) taskstore.State {
	out := taskstore.State{Status: s.Status, Result: s.Result, ResultTruncated: s.ResultTruncated,
		Error: s.Error, InputRequired: s.InputRequired}
	if s.ResultPreview != nil {
		out.ResultPreview = *s.ResultPreview
	}
	if s.ResultArtifact != nil {
		out.ResultArtifact, _ = json.Marshal(s.ResultArtifact)
	}
	return out
}

// ThreadEvents pages through the task events of the caller's scope, oldest
// first, after the position (at, id) (see taskstore.Store.ThreadEvents).
func (s *Service) ThreadEvents(ctx context.Context, sc task.Scope, at time.Time, id string, limit int) ([]taskstore.Task, error) {
	return s.store.ThreadEvents(ctx, sc, at, id, limit)
}

// Event is a task's current event document.
func (s *Service) Event(row taskstore.Task) json.RawMessage { return s.store.Event(row) }

// List returns the tasks of the caller's scope, newest first.
func (s *Service) List(ctx context.Context, sc task.Scope, limit int, activeOnly bool) ([]taskstore.Task, error) {
	return s.store.ListByThread(ctx, sc, limit, activeOnly)
}

// Get returns one of the caller's tasks (taskstore.ErrNotFound otherwise,
// also for another thread's task).
func (s *Service) Get(ctx context.Context, id string, sc task.Scope) (taskstore.Task, error) {
	row, err := s.store.Get(ctx, id, sc.User)
	if err == nil && row.ThreadID != sc.Thread {
		return taskstore.Task{}, taskstore.ErrNotFound
	}
	return row, err
}

// Errors of CancelMatching, with DeerFlow's messages.
var (
	ErrNoMatch = errors.New("No active background task matches this request")
	ErrGone    = errors.New("The selected background task no longer exists")
)

// AmbiguousError lists the active tasks a name matched.
type AmbiguousError struct{ Names []string }

func (e *AmbiguousError) Error() string {
	names := e.Names
	if len(names) > 5 {
		names = names[:5]
	}
	return "More than one active background task matches; specify one task name: " + strings.Join(names, ", ")
}

// CancelMatching cancels the caller's active task in its scope named by
// name: an exact task id, or a task name compared trimmed and case-folded;
// with no name, the only active task.
func (s *Service) CancelMatching(ctx context.Context, sc task.Scope, name string) (taskstore.Task, error) {
	active, err := s.store.ListByThread(ctx, sc, 100, true)
	if err != nil {
		return taskstore.Task{}, err
	}
	var matches []taskstore.Task
	key := taskstore.NameKey(name)
	for _, t := range active {
		if name == "" || t.ID == name || t.TaskNameKey == key {
			matches = append(matches, t)
		}
	}
	switch len(matches) {
	case 0:
		return taskstore.Task{}, ErrNoMatch
	case 1:
	default:
		names := make([]string, len(matches))
		for i, m := range matches {
			names[i] = m.TaskName
		}
		return taskstore.Task{}, &AmbiguousError{Names: names}
	}
	row, err := s.Cancel(ctx, matches[0].ID, sc)
	if errors.Is(err, taskstore.ErrNotFound) {
		return taskstore.Task{}, ErrGone
	}
	return row, err
}

// GetOwned returns one of the user's tasks whatever its thread
// (taskstore.ErrNotFound for an unknown id or another user's task). Task
// ids are unique, so an MCP client bound to the principal finds its task
// without naming the thread it was submitted in.
func (s *Service) GetOwned(ctx context.Context, id, userID string) (taskstore.Task, error) {
	return s.store.Get(ctx, id, userID)
}

// ListOwned pages through the user's tasks in every thread, newest first,
// after the position (before, beforeID) of the previous page's last row
// (zero before: from the newest; see taskstore.Store.ListByUser).
func (s *Service) ListOwned(ctx context.Context, userID string, before time.Time, beforeID string, limit int) ([]taskstore.Task, error) {
	return s.store.ListByUser(ctx, userID, before, beforeID, limit)
}

// UserEvents pages through the user's task events in every thread, oldest
// first, after the position (at, id) (see taskstore.Store.UserEvents).
func (s *Service) UserEvents(ctx context.Context, userID string, at time.Time, id string, limit int) ([]taskstore.Task, error) {
	return s.store.UserEvents(ctx, userID, at, id, limit)
}

// auditStatus records row's status change to status.
func (s *Service) auditStatus(row taskstore.Task, status task.Status) {
	s.auditMove(row, "status", status)
}

// auditMove records a change of row that moved it to status.
func (s *Service) auditMove(row taskstore.Task, change string, status task.Status) {
	from := row.Status
	row.Status = status
	s.auditTask(row, change, from)
}
