// Command reports is a real MCP server for long-running report generation. It
// implements the "ordinary" durable task contract that DeerFlow's
// task_toolsets drive (a submit tool, a status tool and a cancel tool that all
// answer in structuredContent), the same shape as the long-running-reports
// server of DeerFlow's example configuration:
//
//	submit_report      {topic, knobs...}  → {task_id, status: "running"}
//	get_report_status  {task_id}          → {task_id, status, result?, result_artifact?,
//	                                         error?, error_code?, input_required?,
//	                                         poll_after_seconds?}
//	cancel_report      {task_id}          → {task_id, status: cancelled|completed|failed, ...}
//	respond_report     {task_id, action, content?, answer_id}
//	                                      → a status answer, or error_code answer_refused
//	report_stats       {}                 → {submits, status_calls, cancel_calls, per_task}
//
// The optional arguments of submit_report ("knobs") make a task complete,
// fail, ask for input or misbehave in the ways a task runtime must survive;
// report_stats counts the calls received so tests can assert how often the
// runtime really called the server. See README.md for the knobs.
//
// Usage:
//
//	reports [-transport stdio|http|sse] [-listen 127.0.0.1:0] [-name reports]
//	        [-state tasks.json]
//
// With a state file, every task and counter is written to it after each
// change and read back at start, so the server survives its own restart (a
// task whose delay elapsed while the server was down is completed when it
// comes back). Over stdio the default file is .reports/<name>.json in the
// thread workspace the host names in $ANTLER_THREAD_WORKSPACE, else in the
// working directory: a host that restarts starts a new child in the same
// workspace, which resumes the tasks. Over HTTP and SSE, and with -state "",
// tasks live only as long as the process unless -state names a file.
//
// With -transport http (streamable HTTP, endpoint /mcp) or -transport sse
// (legacy HTTP+SSE, endpoints /sse and /message) the server prints exactly one
// line to stdout once its listener is bound:
//
//	listening on http://127.0.0.1:41234
//
// All diagnostics go to stderr. With -transport stdio, stdout carries nothing
// but the protocol and the process exits when stdin is closed.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/antler-mcp/antler/examples/internal/mcpserve"
	"io"
	"io/fs"
	"log"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// serverVersion is the version advertised in serverInfo.
const serverVersion = "0.1.0"

// Transport names accepted by -transport.
const (
	transportStdio = mcpserve.Stdio
	transportHTTP  = mcpserve.HTTP
	transportSSE   = mcpserve.SSE
)

// Tool names. They match the task_toolsets entry of DeerFlow's example
// configuration (report-generation: submit_report / get_report_status /
// cancel_report).
const (
	toolSubmit = "submit_report"
	toolStatus = "get_report_status"
	toolCancel = "cancel_report"
	// toolRespond answers a task's question (the toolset's respond_tool).
	toolRespond = "respond_report"
	toolStats   = "report_stats"
)

// Task states, as spelled on the wire.
const (
	statusRunning       = "running"
	statusInputRequired = "input_required"
	statusCompleted     = "completed"
	statusFailed        = "failed"
	statusCancelled     = "cancelled"
)

// errorCodeNotFound is the error_code that tells a task runtime the remote
// task is gone for good.
const errorCodeNotFound = "task_not_found"

// errorCodeRefused is the error_code with which respond_report refuses an
// answer for good (the task is not waiting for one).
const errorCodeRefused = "answer_refused"

// Knob defaults and bounds.
const (
	defaultDelayMS  = 1000
	maxDelayMS      = 24 * 60 * 60 * 1000 // one day
	maxSlowStatusMS = 10 * 60 * 1000      // ten minutes
	maxResultBytes  = 64 << 20            // 64 MiB
	maxStatusErrors = 1_000_000
)

// stateVersion is the format version of the -state file.
const stateVersion = 1

// config holds the parsed command line.
type config struct {
	transport string
	listen    string
	name      string
	statePath string
}

func main() { mcpserve.Main("reports", parseFlags, run) }

// parseFlags parses and validates the command line. Usage and flag errors are
// written to errOut so that stdout stays clean for the protocol.
func parseFlags(args []string, errOut io.Writer) (config, error) {
	flags := flag.NewFlagSet("reports", flag.ContinueOnError)
	flags.SetOutput(errOut)

	var cfg config
	flags.StringVar(&cfg.transport, "transport", transportStdio, "transport: stdio, http (streamable HTTP at /mcp) or sse (HTTP+SSE at /sse and /message)")
	flags.StringVar(&cfg.listen, "listen", "127.0.0.1:0", "listen address for the http and sse transports")
	flags.StringVar(&cfg.name, "name", "reports", "server name advertised to clients")
	flags.StringVar(&cfg.statePath, "state", "", "JSON file that persists tasks and counters across restarts (default: over stdio .reports/<name>.json in $"+workspaceEnv+" or the working directory, else memory only; \"\" for memory only)")
	if err := flags.Parse(args); err != nil {
		return config{}, err
	}
	stateSet := false
	flags.Visit(func(f *flag.Flag) { stateSet = stateSet || f.Name == "state" })
	if !stateSet && cfg.transport == transportStdio {
		cfg.statePath = defaultStatePath(cfg.name, os.Getenv(workspaceEnv))
	}
	if flags.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", flags.Args())
	}
	switch cfg.transport {
	case transportStdio, transportHTTP, transportSSE:
	default:
		return config{}, fmt.Errorf("unknown transport %q: want stdio, http or sse", cfg.transport)
	}
	return cfg, nil
}

// workspaceEnv names the thread workspace of a stdio child the host pools
// per user thread.
const workspaceEnv = "ANTLER_THREAD_WORKSPACE"

// defaultStatePath is the stdio state file: .reports/<name>.json under the
// workspace, or under the working directory when there is none. The name
// keeps two servers of one workspace apart; anything but [A-Za-z0-9._-]
// in it becomes "_".
func defaultStatePath(name, workspace string) string {
	safe := strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, name)
	if safe == "" || strings.Trim(safe, ".") == "" {
		safe = "reports"
	}
	return filepath.Join(workspace, ".reports", safe+".json")
}

// run loads the task store, builds the MCP server and serves it on the
// configured transport until ctx is cancelled or, for stdio, stdin is closed.
func run(ctx context.Context, cfg config, stdin io.Reader, stdout io.Writer, logger *log.Logger) error {
	st, err := openStore(cfg.statePath, logger)
	if err != nil {
		return err
	}
	srv := newServer(cfg, st)
	return mcpserve.Serve(ctx, srv, mcpserve.Options{Transport: cfg.transport, Listen: cfg.listen,
		Stdin: stdin, Stdout: stdout, Logger: logger, StdioWorkers: 32})
}

// newServer creates the MCP server with the report tools registered.
func newServer(cfg config, st *store) *server.MCPServer {
	srv := server.NewMCPServer(cfg.name, serverVersion,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
	)
	h := &handlers{store: st, now: time.Now}
	srv.AddTools(
		server.ServerTool{Tool: submitTool(), Handler: h.submit},
		server.ServerTool{Tool: statusTool(), Handler: h.status},
		server.ServerTool{Tool: cancelTool(), Handler: h.cancel},
		server.ServerTool{Tool: respondTool(), Handler: h.respond},
		server.ServerTool{Tool: statsTool(), Handler: h.stats},
	)
	return srv
}

// The tools declare no output schema on purpose: the knobs make the status
// tool answer without structuredContent or with isError, and a declared
// schema would let an SDK reject those answers before the task runtime under
// test ever sees them.

// submitTool describes submit_report.
func submitTool() mcp.Tool {
	return mcp.NewTool(toolSubmit,
		mcp.WithDescription("Starts generating a report on a topic in the background and returns its task id at once. Poll get_report_status for the result."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(false),
			DestructiveHint: mcp.ToBoolPtr(false),
			IdempotentHint:  mcp.ToBoolPtr(false),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		}),
		mcp.WithString("topic", mcp.Required(), mcp.MinLength(1), mcp.Description("What the report is about.")),
		mcp.WithInteger("delay_ms", mcp.Min(0), mcp.Max(maxDelayMS), mcp.DefaultNumber(defaultDelayMS),
			mcp.Description("Test knob: milliseconds the task stays running before it ends (completed, failed or input_required).")),
		mcp.WithBoolean("fail", mcp.Description("Test knob: the task ends failed, with an error text, instead of completed.")),
		mcp.WithBoolean("input_required", mcp.Description("Test knob: after the delay the task asks a question (status input_required) and stays there until cancelled.")),
		mcp.WithInteger("result_bytes", mcp.Min(0), mcp.Max(maxResultBytes),
			mcp.Description("Test knob: the completed result is an ASCII string of exactly this many bytes.")),
		mcp.WithNumber("poll_after_seconds",
			mcp.Description("Test knob: echoed verbatim as poll_after_seconds while the task is running or input_required (even 0 or negative, to test client validation).")),
		mcp.WithInteger("slow_status_ms", mcp.Min(0), mcp.Max(maxSlowStatusMS),
			mcp.Description("Test knob: every status call for this task sleeps this long before answering.")),
		mcp.WithInteger("hang_status_calls", mcp.Min(0), mcp.Max(maxStatusErrors),
			mcp.Description("Test knob: the first n status calls never answer; each blocks until the client gives up on it.")),
		mcp.WithInteger("hang_cancel_calls", mcp.Min(0), mcp.Max(maxStatusErrors),
			mcp.Description("Test knob: the first n cancel calls never answer and cancel nothing; each blocks until the client gives up on it.")),
		mcp.WithBoolean("not_found", mcp.Description("Test knob: status calls answer failed with error_code task_not_found.")),
		mcp.WithBoolean("status_is_error", mcp.Description("Test knob: every status call answers isError true (a retryable failure).")),
		mcp.WithInteger("status_errors", mcp.Min(0), mcp.Max(maxStatusErrors),
			mcp.Description("Test knob: the first n status calls answer isError true, later ones answer normally.")),
		mcp.WithBoolean("bad_output", mcp.Description("Test knob: status calls answer with text only, without structuredContent.")),
		mcp.WithBoolean("artifact", mcp.Description("Test knob: the completed status also carries result_artifact {uri, mime_type}.")),
		mcp.WithString("ask", mcp.Description("Test knob: after the delay the task asks this question (status input_required) until it is answered through respond_report; the report then reflects the answer.")),
		mcp.WithInteger("respond_errors", mcp.Min(0), mcp.Max(maxStatusErrors),
			mcp.Description("Test knob: the first n respond_report calls answer isError true (a retryable failure) and apply nothing.")),
		mcp.WithInteger("slow_respond_ms", mcp.Min(0), mcp.Max(maxSlowStatusMS),
			mcp.Description("Test knob: respond_report applies the answer at once, then sleeps this long before replying.")),
	)
}

// respondTool describes respond_report.
func respondTool() mcp.Tool {
	return mcp.NewTool(toolRespond,
		mcp.WithDescription("Answers the question of a report task waiting for input. Idempotent per answer_id: a repeated answer_id changes nothing and reports the task's state."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(false),
			DestructiveHint: mcp.ToBoolPtr(false),
			IdempotentHint:  mcp.ToBoolPtr(true),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		}),
		mcp.WithString("task_id", mcp.Required(), mcp.MinLength(1), mcp.Description("Task id returned by submit_report.")),
		mcp.WithString("action", mcp.Required(), mcp.Enum("accept", "decline", "cancel"), mcp.Description("The user's action, as in an elicitation result.")),
		mcp.WithObject("content", mcp.Description("With accept: the user's answer.")),
		mcp.WithString("answer_id", mcp.Required(), mcp.MinLength(1), mcp.Description("The answer's idempotency key.")),
	)
}

// statusTool describes get_report_status.
func statusTool() mcp.Tool {
	return mcp.NewTool(toolStatus,
		mcp.WithDescription("Reports the state of a report task: running, input_required, completed (with result), failed (with error) or cancelled."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(true),
			DestructiveHint: mcp.ToBoolPtr(false),
			IdempotentHint:  mcp.ToBoolPtr(true),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		}),
		mcp.WithString("task_id", mcp.Required(), mcp.MinLength(1), mcp.Description("Task id returned by submit_report.")),
	)
}

// cancelTool describes cancel_report.
func cancelTool() mcp.Tool {
	return mcp.NewTool(toolCancel,
		mcp.WithDescription("Cancels a report task. Idempotent: a task that already ended keeps, and reports, its final state."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(false),
			DestructiveHint: mcp.ToBoolPtr(true),
			IdempotentHint:  mcp.ToBoolPtr(true),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		}),
		mcp.WithString("task_id", mcp.Required(), mcp.MinLength(1), mcp.Description("Task id returned by submit_report.")),
	)
}

// statsTool describes report_stats.
func statsTool() mcp.Tool {
	return mcp.NewTool(toolStats,
		mcp.WithDescription("Counts the calls this server received: submits, status and cancel calls in total and per task."),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			ReadOnlyHint:    mcp.ToBoolPtr(true),
			DestructiveHint: mcp.ToBoolPtr(false),
			IdempotentHint:  mcp.ToBoolPtr(true),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		}),
	)
}

// knobs are the optional submit_report arguments that shape a task's
// behaviour. They are persisted with the task.
type knobs struct {
	DelayMS          int64    `json:"delay_ms"`
	Fail             bool     `json:"fail,omitempty"`
	InputRequired    bool     `json:"input_required,omitempty"`
	ResultBytes      *int64   `json:"result_bytes,omitempty"`
	PollAfterSeconds *float64 `json:"poll_after_seconds,omitempty"`
	SlowStatusMS     int64    `json:"slow_status_ms,omitempty"`
	HangStatusCalls  int64    `json:"hang_status_calls,omitempty"`
	HangCancelCalls  int64    `json:"hang_cancel_calls,omitempty"`
	NotFound         bool     `json:"not_found,omitempty"`
	StatusIsError    bool     `json:"status_is_error,omitempty"`
	StatusErrors     int64    `json:"status_errors,omitempty"`
	BadOutput        bool     `json:"bad_output,omitempty"`
	Artifact         bool     `json:"artifact,omitempty"`
	Ask              string   `json:"ask,omitempty"`
	RespondErrors    int64    `json:"respond_errors,omitempty"`
	SlowRespondMS    int64    `json:"slow_respond_ms,omitempty"`
}

// answer is the answer a task took through respond_report.
type answer struct {
	ID      string          `json:"id"`
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content,omitempty"`
	At      time.Time       `json:"at"`
}

// task is one report task. Its state is derived from the clock: running until
// ReadyAt, then input_required, failed or completed as the knobs say, unless
// it was cancelled first. Times are wall-clock so they survive a restart.
type task struct {
	ID          string     `json:"id"`
	Topic       string     `json:"topic"`
	Knobs       knobs      `json:"knobs"`
	SubmittedAt time.Time  `json:"submitted_at"`
	ReadyAt     time.Time  `json:"ready_at"`
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
	StatusCalls int64      `json:"status_calls"`
	CancelCalls int64      `json:"cancel_calls"`
	// Answer is the answer taken (nil: none yet); RespondCalls counts the
	// respond_report calls and AnswerCalls them per answer_id.
	Answer       *answer          `json:"answer,omitempty"`
	RespondCalls int64            `json:"respond_calls,omitempty"`
	AnswerCalls  map[string]int64 `json:"answer_calls,omitempty"`
}

// state returns the task's status at now.
func (t *task) state(now time.Time) string {
	switch {
	case t.CancelledAt != nil:
		return statusCancelled
	case now.Before(t.ReadyAt):
		return statusRunning
	case t.Knobs.Ask != "" && t.Answer == nil:
		return statusInputRequired
	case t.Knobs.Ask != "" && t.Answer.Action == "cancel":
		return statusCancelled
	case t.Knobs.InputRequired:
		return statusInputRequired
	case t.Knobs.Fail:
		return statusFailed
	default:
		return statusCompleted
	}
}

// counters are the server-wide call counts. Status and cancel calls for
// unknown task ids are counted here but have no per-task entry.
type counters struct {
	Submits     int64 `json:"submits"`
	StatusCalls int64 `json:"status_calls"`
	CancelCalls int64 `json:"cancel_calls"`
}

// stateFile is the -state file format.
type stateFile struct {
	Version int              `json:"version"`
	Seq     uint64           `json:"seq"`
	Stats   counters         `json:"stats"`
	Tasks   map[string]*task `json:"tasks"`
}

// store holds the tasks and counters, and persists them to path after every
// change when path is set.
type store struct {
	mu     sync.Mutex
	path   string
	logger *log.Logger
	seq    uint64
	stats  counters
	tasks  map[string]*task
	// inflight and maxInflight count status calls running at once per task
	// (not persisted): a host that polled one task twice at once shows up.
	inflight    map[string]int
	maxInflight map[string]int
	// hungCancels counts the cancel calls blocked by hang_cancel_calls now.
	hungCancels int
}

// hangCancel counts a cancel call of task id that hang_cancel_calls makes
// hang, and reports whether it does; done ends the hang.
func (s *store) hangCancel(id string) (hang bool, done func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok || t.CancelCalls >= t.Knobs.HangCancelCalls {
		return false, nil
	}
	s.stats.CancelCalls++
	t.CancelCalls++
	s.hungCancels++
	return true, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.hungCancels--
	}
}

// enter and leave bracket one status call of task id.
func (s *store) enter(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight == nil {
		s.inflight, s.maxInflight = map[string]int{}, map[string]int{}
	}
	s.inflight[id]++
	s.maxInflight[id] = max(s.maxInflight[id], s.inflight[id])
}

func (s *store) leave(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight[id]--
}

// openStore returns an empty store, or with path set the store saved there;
// a missing file (and directory) is an empty store, an unreadable one an
// error.
func openStore(path string, logger *log.Logger) (*store, error) {
	st := &store{path: path, logger: logger, tasks: map[string]*task{}}
	if path == "" {
		return st, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	if f.Version != stateVersion {
		return nil, fmt.Errorf("read state %s: unsupported version %d, want %d", path, f.Version, stateVersion)
	}
	st.seq, st.stats = f.Seq, f.Stats
	for id, t := range f.Tasks {
		if t == nil || t.ID != id {
			return nil, fmt.Errorf("read state %s: malformed task %q", path, id)
		}
		st.tasks[id] = t
	}
	logger.Printf("loaded %d tasks from %s", len(st.tasks), path)
	return st, nil
}

// saveLocked writes the store to its file, atomically: a crash leaves either
// the old or the new file. The caller holds mu.
func (s *store) saveLocked() error {
	if s.path == "" {
		return nil
	}
	data, err := json.Marshal(stateFile{Version: stateVersion, Seq: s.seq, Stats: s.stats, Tasks: s.tasks})
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), "."+filepath.Base(s.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write state %s: %w", s.path, err)
	}
	return nil
}

// saveOrLog saves the store and logs a failure. Used where losing a counter
// update is better than failing the call. The caller holds mu.
func (s *store) saveOrLog() {
	if err := s.saveLocked(); err != nil {
		s.logger.Print(err)
	}
}

// submit creates a task and returns a copy of it.
func (s *store) submit(topic string, k knobs, now time.Time) (task, error) {
	suffix, err := randomHex(4)
	if err != nil {
		return task{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	t := &task{
		// The sequence number makes ids unique within the process (and,
		// with -state, across its restarts); the random suffix keeps a
		// restarted server without -state from reissuing an id the client
		// still tracks.
		ID:          fmt.Sprintf("report-%d-%s", s.seq, suffix),
		Topic:       topic,
		Knobs:       k,
		SubmittedAt: now,
		ReadyAt:     now.Add(time.Duration(k.DelayMS) * time.Millisecond),
	}
	s.tasks[t.ID] = t
	s.stats.Submits++
	if err := s.saveLocked(); err != nil {
		delete(s.tasks, t.ID)
		s.stats.Submits--
		return task{}, err
	}
	return *t, nil
}

// noteStatus counts a status call and returns a copy of the task, if known.
func (s *store) noteStatus(id string) (task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.StatusCalls++
	t, ok := s.tasks[id]
	if ok {
		t.StatusCalls++
	}
	s.saveOrLog()
	if !ok {
		return task{}, false
	}
	return *t, true
}

// get returns a copy of the task, if known.
func (s *store) get(id string) (task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return task{}, false
	}
	return *t, true
}

// cancel counts a cancel call and cancels the task if it has not ended. It
// returns a copy of the task after the call, if known.
func (s *store) cancel(id string, now time.Time) (task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.CancelCalls++
	t, ok := s.tasks[id]
	if !ok {
		s.saveOrLog()
		return task{}, false
	}
	t.CancelCalls++
	switch t.state(now) {
	case statusRunning, statusInputRequired:
		at := now
		t.CancelledAt = &at
	}
	s.saveOrLog()
	return *t, true
}

// taskStats are the per-task counts reported by report_stats.
type taskStats struct {
	// MaxConcurrentStatus is the most status calls of this task that ran at once.
	MaxConcurrentStatus int   `json:"max_concurrent_status"`
	StatusCalls         int64 `json:"status_calls"`
	CancelCalls         int64 `json:"cancel_calls"`
	// RespondCalls counts respond_report calls; AnswerCalls counts them per
	// answer_id; AnswerApplied is the answer_id of the one answer the task
	// took ("" for none).
	RespondCalls  int64            `json:"respond_calls"`
	AnswerCalls   map[string]int64 `json:"answer_calls,omitempty"`
	AnswerApplied string           `json:"answer_applied,omitempty"`
}

// statsPayload is the structuredContent of report_stats.
type statsPayload struct {
	Submits     int64                `json:"submits"`
	StatusCalls int64                `json:"status_calls"`
	CancelCalls int64                `json:"cancel_calls"`
	PerTask     map[string]taskStats `json:"per_task"`
	// InFlightStatus is the number of status calls running right now.
	InFlightStatus int `json:"in_flight_status"`
	// HungCancels is the number of cancel calls hang_cancel_calls blocks now.
	HungCancels int `json:"hung_cancels"`
}

// snapshotStats returns the current counts.
func (s *store) snapshotStats() statsPayload {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := statsPayload{
		Submits:     s.stats.Submits,
		StatusCalls: s.stats.StatusCalls,
		CancelCalls: s.stats.CancelCalls,
		PerTask:     make(map[string]taskStats, len(s.tasks)),
		HungCancels: s.hungCancels,
	}
	for id, t := range s.tasks {
		ts := taskStats{StatusCalls: t.StatusCalls, CancelCalls: t.CancelCalls, MaxConcurrentStatus: s.maxInflight[id],
			RespondCalls: t.RespondCalls, AnswerCalls: maps.Clone(t.AnswerCalls)}
		if t.Answer != nil {
			ts.AnswerApplied = t.Answer.ID
		}
		p.PerTask[id] = ts
	}
	for _, n := range s.inflight {
		p.InFlightStatus += n
	}
	return p
}

// randomHex returns n random bytes, hex-encoded.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("task id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// artifact is the result_artifact of a completed task.
type artifact struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mime_type"`
}

// taskPayload is the structuredContent of submit_report, get_report_status
// and cancel_report.
type taskPayload struct {
	TaskID           string         `json:"task_id"`
	Status           string         `json:"status"`
	Result           *string        `json:"result,omitempty"`
	ResultArtifact   *artifact      `json:"result_artifact,omitempty"`
	Error            string         `json:"error,omitempty"`
	ErrorCode        string         `json:"error_code,omitempty"`
	InputRequired    map[string]any `json:"input_required,omitempty"`
	PollAfterSeconds *float64       `json:"poll_after_seconds,omitempty"`
}

// describe returns the payload that reports t at now. Cancel answers leave
// out the poll hint and the question, which only a status answer carries.
func describe(t task, now time.Time, forStatus bool) taskPayload {
	p := taskPayload{TaskID: t.ID, Status: t.state(now)}
	switch p.Status {
	case statusCompleted:
		r := reportText(t)
		p.Result = &r
		if t.Knobs.Artifact {
			p.ResultArtifact = &artifact{URI: "reports://" + t.ID + "/report.md", MIMEType: "text/markdown"}
		}
	case statusFailed:
		p.Error = fmt.Sprintf("report generation failed: no sources could be gathered for %q", t.Topic)
	case statusInputRequired:
		if forStatus {
			q := fmt.Sprintf("Which audience should the report on %q be written for?", t.Topic)
			if t.Knobs.Ask != "" {
				q = t.Knobs.Ask
			}
			p.InputRequired = map[string]any{"question": q}
		}
	}
	if forStatus && (p.Status == statusRunning || p.Status == statusInputRequired) {
		p.PollAfterSeconds = t.Knobs.PollAfterSeconds
	}
	return p
}

// notFound is the payload for a task this server does not know.
func notFound(id string) taskPayload {
	return taskPayload{
		TaskID:    id,
		Status:    statusFailed,
		Error:     fmt.Sprintf("report task %q was not found", id),
		ErrorCode: errorCodeNotFound,
	}
}

// filler pads oversized results.
const filler = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. "

// reportText is the result of a completed task: a short Markdown report, or
// with result_bytes an ASCII string of exactly that many bytes (ASCII so that
// the length is the same in bytes, runes and JSON-decoded strings).
func reportText(t task) string {
	if t.Knobs.ResultBytes == nil {
		text := fmt.Sprintf("# Report: %s\n\nGenerated by task %s, submitted %s.\n\nThe findings on %s fit in one paragraph.\n",
			t.Topic, t.ID, t.SubmittedAt.UTC().Format(time.RFC3339), t.Topic)
		switch {
		case t.Answer != nil && t.Answer.Action == "accept":
			text += fmt.Sprintf("\nAsked %q, the user answered %s.\n", t.Knobs.Ask, t.Answer.Content)
		case t.Answer != nil && t.Answer.Action == "decline":
			text += fmt.Sprintf("\nAsked %q, the user declined to answer; the report is written for a general audience.\n", t.Knobs.Ask)
		}
		return text
	}
	n := int(*t.Knobs.ResultBytes)
	var b strings.Builder
	b.Grow(n + len(filler))
	fmt.Fprintf(&b, "Report %s, %d bytes.\n", t.ID, n)
	for b.Len() < n {
		b.WriteString(filler)
	}
	return b.String()[:n]
}

// structured returns a result carrying p as structuredContent and, as the
// MCP specification recommends, its JSON serialisation as text.
func structured(p any) (*mcp.CallToolResult, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return mcp.NewToolResultStructured(p, string(data)), nil
}

// handlers implements the tools on a store.
type handlers struct {
	store *store
	now   func() time.Time
}

// submit implements submit_report.
func (h *handlers) submit(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	topic, _ := args["topic"].(string)
	if strings.TrimSpace(topic) == "" {
		return mcp.NewToolResultError("topic must be a non-empty string"), nil
	}
	k, err := parseKnobs(args)
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	t, err := h.store.submit(topic, k, h.now())
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return structured(taskPayload{TaskID: t.ID, Status: statusRunning})
}

// status implements get_report_status. The knobs apply in this order: the
// call is counted, hang_status_calls blocks, slow_status_ms sleeps, then not_found, status_is_error /
// status_errors and bad_output replace the ordinary answer.
func (h *handlers) status(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, errRes := taskIDArg(req)
	if errRes != nil {
		return errRes, nil
	}
	t, ok := h.store.noteStatus(id)
	if !ok {
		return structured(notFound(id))
	}
	h.store.enter(id)
	defer h.store.leave(id)
	k, call := t.Knobs, t.StatusCalls
	if call <= k.HangStatusCalls {
		<-ctx.Done()
		return nil, fmt.Errorf("status of %s abandoned by the client: %w", id, ctx.Err())
	}
	if k.SlowStatusMS > 0 {
		timer := time.NewTimer(time.Duration(k.SlowStatusMS) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, fmt.Errorf("status of %s interrupted: %w", id, ctx.Err())
		}
		// A cancel may have landed during the sleep; answer the truth.
		if fresh, ok := h.store.get(id); ok {
			t = fresh
		}
	}
	switch {
	case k.NotFound:
		return structured(notFound(id))
	case k.StatusIsError || call <= k.StatusErrors:
		return mcp.NewToolResultError(fmt.Sprintf("report backend temporarily unavailable while reading task %s; try again", id)), nil
	case k.BadOutput:
		return mcp.NewToolResultText(fmt.Sprintf("report %s is %s", id, t.state(h.now()))), nil
	}
	return structured(describe(t, h.now(), true))
}

// cancel implements cancel_report.
func (h *handlers) cancel(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, errRes := taskIDArg(req)
	if errRes != nil {
		return errRes, nil
	}
	if hang, done := h.store.hangCancel(id); hang {
		defer done()
		<-ctx.Done()
		return nil, fmt.Errorf("cancel of %s abandoned by the client: %w", id, ctx.Err())
	}
	now := h.now()
	t, ok := h.store.cancel(id, now)
	if !ok {
		return structured(notFound(id))
	}
	return structured(describe(t, now, false))
}

// respondOutcome is what one respond_report call did.
type respondOutcome int

const (
	respondApplied respondOutcome = iota
	respondRepeated
	respondRefused
	respondFailed
)

// respond counts a respond_report call of task id and applies the answer
// a, unless respond_errors fails the call, a.ID was already applied (a
// redelivery: nothing changes) or the task is not waiting for input. It
// returns a copy of the task after the call, if known.
func (s *store) respond(id string, a answer, now time.Time) (task, respondOutcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return task{}, respondRefused, false
	}
	t.RespondCalls++
	if t.AnswerCalls == nil {
		t.AnswerCalls = map[string]int64{}
	}
	t.AnswerCalls[a.ID]++
	out := respondApplied
	switch {
	case t.RespondCalls <= t.Knobs.RespondErrors:
		out = respondFailed
	case t.Answer != nil && t.Answer.ID == a.ID:
		out = respondRepeated
	case t.state(now) != statusInputRequired || t.Knobs.Ask == "":
		out = respondRefused
	default:
		t.Answer = &a
	}
	s.saveOrLog()
	return *t, out, true
}

// respond implements respond_report. respond_errors fails the first calls;
// slow_respond_ms sleeps after an answer is applied, before the reply.
func (h *handlers) respond(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, errRes := taskIDArg(req)
	if errRes != nil {
		return errRes, nil
	}
	args := req.GetArguments()
	a := answer{At: h.now()}
	a.Action, _ = args["action"].(string)
	a.ID, _ = args["answer_id"].(string)
	if a.ID == "" {
		return mcp.NewToolResultError("answer_id must be a non-empty string"), nil
	}
	switch c := args["content"].(type) {
	case nil:
	case map[string]any:
		a.Content, _ = json.Marshal(c)
	default:
		return mcp.NewToolResultError("content must be an object"), nil
	}
	switch {
	case a.Action != "accept" && a.Action != "decline" && a.Action != "cancel":
		return mcp.NewToolResultError("action must be accept, decline or cancel"), nil
	case a.Action == "accept" && a.Content == nil:
		return mcp.NewToolResultError("content is required with accept"), nil
	}
	t, out, ok := h.store.respond(id, a, h.now())
	if !ok {
		return structured(notFound(id))
	}
	switch out {
	case respondFailed:
		return mcp.NewToolResultError(fmt.Sprintf("report backend temporarily unavailable while answering task %s; try again", id)), nil
	case respondRefused:
		p := describe(t, h.now(), true)
		p.ErrorCode, p.Error = errorCodeRefused, fmt.Sprintf("report task %s is not waiting for input", id)
		return structured(p)
	case respondApplied:
		if ms := t.Knobs.SlowRespondMS; ms > 0 {
			timer := time.NewTimer(time.Duration(ms) * time.Millisecond)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-ctx.Done():
				return nil, fmt.Errorf("answer to %s applied, reply abandoned by the client: %w", id, ctx.Err())
			}
		}
	}
	return structured(describe(t, h.now(), true))
}

// stats implements report_stats.
func (h *handlers) stats(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return structured(h.store.snapshotStats())
}

// taskIDArg returns the task_id argument, or a tool error result.
func taskIDArg(req mcp.CallToolRequest) (string, *mcp.CallToolResult) {
	id, _ := req.GetArguments()["task_id"].(string)
	if id == "" {
		return "", mcp.NewToolResultError("task_id must be a non-empty string")
	}
	return id, nil
}

// parseKnobs reads and validates the optional knobs of submit_report.
func parseKnobs(args map[string]any) (knobs, error) {
	k := knobs{DelayMS: defaultDelayMS}
	var err error
	set := func(e error) {
		if err == nil {
			err = e
		}
	}
	if v, ok, e := intArg(args, "delay_ms", 0, maxDelayMS); ok {
		k.DelayMS = v
	} else {
		set(e)
	}
	if v, ok, e := intArg(args, "result_bytes", 0, maxResultBytes); ok {
		k.ResultBytes = &v
	} else {
		set(e)
	}
	if v, ok, e := intArg(args, "slow_status_ms", 0, maxSlowStatusMS); ok {
		k.SlowStatusMS = v
	} else {
		set(e)
	}
	if v, ok, e := intArg(args, "hang_status_calls", 0, maxStatusErrors); ok {
		k.HangStatusCalls = v
	} else {
		set(e)
	}
	if v, ok, e := intArg(args, "hang_cancel_calls", 0, maxStatusErrors); ok {
		k.HangCancelCalls = v
	} else {
		set(e)
	}
	if v, ok, e := intArg(args, "status_errors", 0, maxStatusErrors); ok {
		k.StatusErrors = v
	} else {
		set(e)
	}
	if v, ok, e := intArg(args, "respond_errors", 0, maxStatusErrors); ok {
		k.RespondErrors = v
	} else {
		set(e)
	}
	if v, ok, e := intArg(args, "slow_respond_ms", 0, maxSlowStatusMS); ok {
		k.SlowRespondMS = v
	} else {
		set(e)
	}
	if v, ok := args["ask"]; ok && v != nil {
		q, isStr := v.(string)
		if !isStr || strings.TrimSpace(q) == "" {
			set(fmt.Errorf("ask must be a non-empty string"))
		} else {
			k.Ask = q
		}
	}
	if v, ok := args["poll_after_seconds"]; ok && v != nil {
		f, isNum := v.(float64)
		if !isNum || math.IsNaN(f) || math.IsInf(f, 0) {
			set(fmt.Errorf("poll_after_seconds must be a finite number, got %v", v))
		} else {
			k.PollAfterSeconds = &f
		}
	}
	for _, opt := range []struct {
		name string
		dst  *bool
	}{
		{"fail", &k.Fail},
		{"input_required", &k.InputRequired},
		{"not_found", &k.NotFound},
		{"status_is_error", &k.StatusIsError},
		{"bad_output", &k.BadOutput},
		{"artifact", &k.Artifact},
	} {
		name, dst := opt.name, opt.dst
		v, ok := args[name]
		if !ok || v == nil {
			continue
		}
		b, isBool := v.(bool)
		if !isBool {
			set(fmt.Errorf("%s must be a boolean, got %v", name, v))
			continue
		}
		*dst = b
	}
	return k, err
}

// intArg reads an optional integer argument in [lo, hi]. ok is false when the
// argument is absent (err nil) or invalid (err set).
func intArg(args map[string]any, name string, lo, hi int64) (v int64, ok bool, err error) {
	raw, present := args[name]
	if !present || raw == nil {
		return 0, false, nil
	}
	f, isNum := raw.(float64)
	if !isNum || f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
		return 0, false, fmt.Errorf("%s must be an integer from %d to %d, got %v", name, lo, hi, raw)
	}
	return int64(f), true, nil
}
