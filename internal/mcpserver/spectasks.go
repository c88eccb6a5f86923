package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/spectask"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/tasktools"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// The durable tasks as spec Tasks. mcp-go's own task engine keeps tasks in
// memory, so it is never enabled: the door answers the task methods and the
// task-augmented tools/call itself, from the durable store (internal/spectask),
// in front of mcp-go's streamable handler. A streamable POST carries one
// JSON-RPC message, so the door reads it, answers the few methods that are
// its own, and hands everything else to mcp-go unchanged. Session
// validation stays where it is: Streamable has already refused a session
// the caller does not own, and a 2025-11-25 session is served here only
// once mcp-go's initialize recorded it.
//
// Who gets what:
//   - a session that negotiated 2025-11-25 over streamable HTTP sees the
//     tasks capability, the submit tools listed with execution.taskSupport
//     "optional", and a tools/call with params.task answered with a
//     CreateTaskResult; tasks/get, tasks/result, tasks/list and tasks/cancel
//     follow, and notifications/tasks/status reach the session for the
//     tasks it created or asked about; a task waiting for input is asked on
//     its tasks/result stream when the session declared elicitation
//     (taskinput.go);
//   - a 2026-07-28 request that declares ExtensionTasks in its client
//     capabilities gets resultType "task" for a submit tool, tasks/get with
//     the result or the inputRequests inlined, tasks/update answering
//     them, tasks/cancel (all three with Mcp-Name: <taskId>), and
//     subscriptions/listen with notifications.taskIds streaming
//     notifications/tasks;
//   - everyone else (older revisions, a plain call, legacy HTTP+SSE) gets
//     DeerFlow's behaviour: a local task id and the two host tools.
//
// All of them are rows of the same durable store, bound to the user.

// ExtensionTasks is the 2026-07-28 tasks extension's identifier, declared
// in server/discover and looked for in a request's client capabilities.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// Task methods (2025-11-25 and the extension).
const (
	methodTasksGet    = string(mcp.MethodTasksGet)
	methodTasksResult = string(mcp.MethodTasksResult)
	methodTasksList   = string(mcp.MethodTasksList)
	methodTasksCancel = string(mcp.MethodTasksCancel)
	methodTasksUpdate = "tasks/update"
)

// specTasks is the door's per-session task state: which streamable
// sessions speak 2025-11-25, and the watchers that send them
// notifications/tasks/status.
type specTasks struct {
	svc  *spectask.Service
	send func(sessionID, method string, params map[string]any) error
	ctx  context.Context

	mu       sync.Mutex
	closed   bool
	sessions map[string]*taskSession
	// listens counts each user's open task subscriptions, capped at
	// maxListens: each one reads the store while it is open.
	listens    map[string]int
	maxListens int
	wg         sync.WaitGroup

	// inputs are the task questions sent on tasks/result streams waiting
	// for their client's answer, for at most inputTimeout (taskinput.go).
	inputs       inputWaits
	inputTimeout time.Duration
}

// taskSession is one 2025-11-25 session's watchers, one per user whose
// tasks it touched (an internal principal may act for several).
type taskSession struct {
	watches map[string]*taskWatch
}

// taskWatch is the tasks one watcher reports to its session.
type taskWatch struct {
	mu     sync.Mutex
	ids    map[string]bool
	cancel context.CancelFunc
}

func (w *taskWatch) has(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ids[id]
}

func newSpecTasks(ctx context.Context, svc *spectask.Service, send func(string, string, map[string]any) error, maxListens int) *specTasks {
	return &specTasks{svc: svc, send: send, ctx: ctx, sessions: map[string]*taskSession{}, listens: map[string]int{}, maxListens: maxListens}
}

// listen takes one of user's task subscriptions, or reports false at the cap.
func (t *specTasks) listen(user string) (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.listens[user] >= t.maxListens {
		return nil, false
	}
	t.listens[user]++
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.listens[user]--; t.listens[user] <= 0 {
			delete(t.listens, user)
		}
	}, true
}

// streamableKey marks a request that came through the streamable
// transport, the one transport whose task methods the door answers.
type streamableKey struct{}

// sessionKey carries the session id of a message the door answers itself
// (mcp-go's session is not in its context).
type sessionKey struct{}

// sessionIDFrom is the MCP session a request belongs to ("" for none).
func sessionIDFrom(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil && cs.SessionID() != "" {
		return cs.SessionID()
	}
	id, _ := ctx.Value(sessionKey{}).(string)
	return id
}

// taskHooks registers what the door adds to mcp-go's handshake and tool
// list for 2025-11-25 sessions.
func (s *Server) taskHooks(hooks *server.Hooks) {
	if s.spec == nil {
		return
	}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		cs := server.ClientSessionFromContext(ctx)
		if res == nil || cs == nil || cs.SessionID() == "" || ctx.Value(streamableKey{}) == nil || res.ProtocolVersion != mcp.ProtocolVersion20251125 {
			return
		}
		res.Capabilities.Tasks = &mcp.TasksCapability{List: &struct{}{}, Cancel: &struct{}{},
			Requests: &mcp.TaskRequestsCapability{Tools: &struct {
				Call *struct{} `json:"call,omitempty"`
			}{Call: &struct{}{}}}}
		s.spec.open(cs.SessionID())
	})
	hooks.AddAfterListTools(func(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
		if res == nil || !s.spec.legacy(sessionIDFrom(ctx)) {
			return
		}
		var snap *toolcache.ToolSet
		if s.cache != nil {
			snap, _ = s.cache.ToolSet(ctx)
		}
		for i := range res.Tools {
			durable := false
			if m := res.Tools[i].Meta; m != nil && m.AdditionalFields[MetaTaskToolset] != nil {
				durable = true
			} else if snap != nil {
				// A tool its own server runs as an MCP task.
				t, ok := snap.Tool(res.Tools[i].Name)
				durable = ok && t.IsDurable()
			}
			if durable {
				res.Tools[i].Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
			}
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { s.spec.end(cs.SessionID()) })
}

// open records a 2025-11-25 session.
func (t *specTasks) open(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.sessions[id] = &taskSession{watches: map[string]*taskWatch{}}
	}
}

// legacy reports whether id is a 2025-11-25 session the door serves tasks to.
func (t *specTasks) legacy(id string) bool {
	if t == nil || id == "" {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.sessions[id]
	return ok
}

// end stops a session's watchers.
func (t *specTasks) end(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ses, ok := t.sessions[id]; ok {
		for _, w := range ses.watches {
			w.cancel()
		}
		delete(t.sessions, id)
	}
}

// close stops every watcher and waits for them.
func (t *specTasks) close() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.closed = true
	for id, ses := range t.sessions {
		for _, w := range ses.watches {
			w.cancel()
		}
		delete(t.sessions, id)
	}
	t.mu.Unlock()
	t.wg.Wait()
}

// track makes the session hear notifications/tasks/status for taskID: its
// user's watcher starts with the first task.
func (t *specTasks) track(sessionID, user, taskID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ses, ok := t.sessions[sessionID]
	if !ok || t.closed {
		return
	}
	w, ok := ses.watches[user]
	if !ok {
		ctx, cancel := context.WithCancel(t.ctx)
		w = &taskWatch{ids: map[string]bool{}, cancel: cancel}
		ses.watches[user] = w
		t.wg.Add(1)
		go t.watch(ctx, sessionID, user, w)
	}
	w.mu.Lock()
	w.ids[taskID] = true
	w.mu.Unlock()
}

func (t *specTasks) watch(ctx context.Context, sessionID, user string, w *taskWatch) {
	defer t.wg.Done()
	defer w.cancel()
	_ = t.svc.Watch(ctx, spectask.Rev20251125, spectask.Caller{UserID: user}, nil, func(method string, params json.RawMessage) {
		var p map[string]any
		if json.Unmarshal(params, &p) != nil {
			return
		}
		if id, _ := p["taskId"].(string); !w.has(id) {
			return
		}
		// A session with no open stream drops it: the notification is
		// optional and tasks/get is the record.
		_ = t.send(sessionID, method, p)
	})
}

// extensions are the 2026-07-28 extensions the door declares.
func (s *Server) extensions() map[string]any {
	if s.spec == nil {
		return nil
	}
	return map[string]any{ExtensionTasks: map[string]any{}}
}

// rpcMessage is the one JSON-RPC message of a streamable POST.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// taskParams are the params of the task methods, tools/call and
// subscriptions/listen the door reads.
type taskParams struct {
	TaskID string          `json:"taskId"`
	Cursor string          `json:"cursor"`
	Name   string          `json:"name"`
	Task   json.RawMessage `json:"task"`
	// InputResponses are a tasks/update's answers.
	InputResponses json.RawMessage `json:"inputResponses"`
	Notifications  struct {
		TaskIDs []string `json:"taskIds"`
	} `json:"notifications"`
	Meta *mcp.Meta `json:"_meta"`
}

// rpcError is a JSON-RPC error the door answers with.
type rpcError struct {
	code int
	msg  string
}

// serveTasks answers a streamable POST that is the door's own (a task
// method, a task-augmented submit, a task subscription) and reports
// whether it did; anything else is left, body intact, for mcp-go.
func (s *Server) serveTasks(w http.ResponseWriter, r *http.Request, sessionID string, modern bool) bool {
	if s.spec == nil || r.Method != http.MethodPost {
		return false
	}
	if modern {
		sessionID = "" // 2026-07-28 has no sessions
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return false
	}
	var msg rpcMessage
	if json.Unmarshal(body, &msg) != nil || msg.JSONRPC != mcp.JSONRPC_VERSION || len(msg.ID) == 0 || string(msg.ID) == "null" {
		return false
	}
	if msg.Method == "" { // a response: to a task question of the door's?
		return !modern && s.spec.legacy(sessionID) && s.takeInputReply(w, sessionID, msg.ID, body)
	}
	switch msg.Method {
	case string(mcp.MethodToolsCall), methodTasksGet, methodTasksResult, methodTasksList, methodTasksCancel, methodTasksUpdate, string(mcp.MethodSubscriptionsListen):
	default:
		return false
	}
	if !modern && (!s.spec.legacy(sessionID) || msg.Method == string(mcp.MethodSubscriptionsListen) || msg.Method == methodTasksUpdate) {
		return false
	}
	// A request without params is a request with none (the TS SDK's
	// listTasks sends none), never mcp-go's: it knows no tasks/*.
	var p taskParams
	if raw := bytes.TrimSpace(msg.Params); len(raw) > 0 && string(raw) != "null" && json.Unmarshal(raw, &p) != nil {
		return false // mcp-go reports the malformed params
	}
	rev := spectask.Rev20251125
	if modern {
		version := r.Header.Get(mcp.HeaderProtocolVersion)
		caps := p.Meta.ClientCapabilities()
		if caps == nil || caps.Extensions[ExtensionTasks] == nil || p.Meta.ProtocolVersion() != version || r.Header.Get(mcp.HeaderLastEventID) != "" {
			return false // not a tasks-extension request, or one mcp-go refuses
		}
		rev = spectask.Rev20260728
	}
	ctx := withCaller(r.Context(), r)
	if sessionID != "" {
		ctx = context.WithValue(ctx, sessionKey{}, sessionID)
		s.touch(r)
		defer s.touch(r) // a tasks/result may have blocked for long
	}
	if msg.Method == string(mcp.MethodToolsCall) {
		return s.submitTask(ctx, w, r, msg, p, rev)
	}
	if msg.Method == string(mcp.MethodSubscriptionsListen) {
		if len(p.Notifications.TaskIDs) == 0 {
			return false // an ordinary subscription: mcp-go's
		}
		s.listenTasks(ctx, w, r, msg, p)
		return true
	}
	if rev == spectask.Rev20260728 {
		if e := checkTaskHeaders(r, msg, p); e != nil {
			writeRPC(w, msg.ID, nil, e, true)
			return true
		}
	}
	call, err := s.identify(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Meta: p.Meta}})
	if err != nil {
		writeRPC(w, msg.ID, nil, &rpcError{mcp.INVALID_PARAMS, err.Error()}, modern)
		return true
	}
	c := spectask.Caller{UserID: call.UserID, ThreadID: call.ThreadID}
	st := &resultStream{w: w}
	var res json.RawMessage
	switch msg.Method {
	case methodTasksGet:
		res, err = s.spec.svc.Get(ctx, rev, c, p.TaskID)
	case methodTasksResult:
		var ask spectask.Asker
		if rev == spectask.Rev20251125 && s.elicits(sessionID) {
			ask = s.asker(st, sessionID)
		}
		res, err = s.spec.svc.ResultAsking(ctx, rev, c, p.TaskID, ask)
	case methodTasksList:
		res, err = s.spec.svc.List(ctx, rev, c, p.Cursor)
	case methodTasksCancel:
		res, err = s.spec.svc.Cancel(ctx, rev, c, p.TaskID)
	default: // tasks/update
		res, err = s.spec.svc.Update(ctx, rev, c, p.TaskID, p.InputResponses)
	}
	if err == nil && rev == spectask.Rev20251125 && msg.Method != methodTasksList {
		s.spec.track(sessionID, c.UserID, p.TaskID) // a resumed task is heard again
	}
	if err != nil && r.Context().Err() != nil {
		return true // the client left
	}
	if st.open {
		st.reply(msg.ID, res, s.taskError(msg.Method, err))
		return true
	}
	writeRPC(w, msg.ID, res, s.taskError(msg.Method, err), modern)
	return true
}

// touch tells mcp-go the session of r is in use, as any request mcp-go
// serves does, so a client that only polls its tasks is not ended as idle:
// a ping on the same session, its answer discarded.
func (s *Server) touch(r *http.Request) {
	ping := r.Clone(context.WithoutCancel(r.Context()))
	ping.Body = io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":"antler-touch","method":"ping"}`))
	ping.ContentLength = -1
	ping.Header.Del(mcp.HeaderMethod)
	s.streamable.ServeHTTP(discard{header: http.Header{}}, ping)
}

// discard is a response nobody reads.
type discard struct{ header http.Header }

func (d discard) Header() http.Header         { return d.header }
func (d discard) Write(b []byte) (int, error) { return len(b), nil }
func (d discard) WriteHeader(int)             {}

// taskError maps a spectask error to its JSON-RPC error (nil for none).
// An answer the task takes no answer for now (the REST route's 409) or
// whose driver cannot pass it on (its 422) is -32602, its message saying
// which.
func (s *Server) taskError(method string, err error) *rpcError {
	var ie *inputError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie):
		return &ie.rpcError
	case errors.Is(err, spectask.ErrNotFound):
		return &rpcError{mcp.INVALID_PARAMS, "task not found"}
	case errors.Is(err, spectask.ErrInvalidParams), errors.Is(err, spectask.ErrAnswerConflict), errors.Is(err, spectask.ErrCannotAnswer):
		return &rpcError{mcp.INVALID_PARAMS, taskText(err)}
	case errors.Is(err, taskservice.ErrNotRunning):
		return &rpcError{mcp.INTERNAL_ERROR, "MCP task service not available"}
	case errors.Is(err, spectask.ErrMethodNotFound):
		return &rpcError{mcp.METHOD_NOT_FOUND, taskText(err)}
	}
	s.log.Error("MCP task request failed", "method", method, "error", dispatch.Redact(err.Error()))
	return &rpcError{mcp.INTERNAL_ERROR, "the task request failed: " + dispatch.Redact(err.Error())}
}

// taskText is a spectask error as a client reads it: without the Go
// package prefix ("spectask: invalid params: unknown cursor" is "invalid
// params: unknown cursor").
func taskText(err error) string {
	return strings.TrimPrefix(err.Error(), "spectask: ")
}

// checkTaskHeaders applies the 2026-07-28 header rules to a task method:
// Mcp-Method mirrors the method, and tasks/get, tasks/update and
// tasks/cancel carry Mcp-Name: <taskId> so intermediaries can route them.
func checkTaskHeaders(r *http.Request, msg rpcMessage, p taskParams) *rpcError {
	if got := r.Header.Get(mcp.HeaderMethod); got != msg.Method {
		return &rpcError{mcp.HEADER_MISMATCH, fmt.Sprintf("%s header %q does not match the request method %q", mcp.HeaderMethod, truncate(got), msg.Method)}
	}
	switch msg.Method {
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
		got, ok := mcp.DecodeHeaderValue(r.Header.Get(mcp.HeaderName))
		if !ok || got == "" || got != p.TaskID {
			return &rpcError{mcp.HEADER_MISMATCH, fmt.Sprintf("%s header %q does not match params.taskId", mcp.HeaderName, truncate(got))}
		}
	}
	return nil
}

// submitTask answers a submit tool's tools/call as a task: for 2025-11-25
// when it carries params.task, for the extension always (the server
// decides). Any other tools/call is mcp-go's.
func (s *Server) submitTask(ctx context.Context, w http.ResponseWriter, r *http.Request, msg rpcMessage, p taskParams, rev spectask.Revision) bool {
	modern := rev == spectask.Rev20260728
	if s.cache == nil || (!modern && (len(p.Task) == 0 || string(p.Task) == "null")) {
		return false
	}
	snap, err := s.cache.ToolSet(ctx)
	if err != nil {
		return false
	}
	tool, ok := snap.Tool(p.Name)
	if ok && !tool.IsDurable() && !modern {
		// 2025-11-25: a task-augmented call of a tool whose taskSupport is
		// forbidden (every tool but a durable one) SHOULD be -32601.
		writeRPC(w, msg.ID, nil, &rpcError{mcp.METHOD_NOT_FOUND, fmt.Sprintf("tool %q does not support task-augmented execution", truncate(p.Name))}, false)
		return true
	}
	if !ok || !tool.IsDurable() {
		return false
	}
	var req mcp.CallToolRequest
	if err := json.Unmarshal(msg.Params, &req.Params); err != nil {
		return false
	}
	if modern && mcp.ValidateStandardHeaders(r.Header.Get, r.Header.Get(mcp.HeaderProtocolVersion), mcp.MethodToolsCall, msg.Params) != nil {
		return false // mcp-go answers the header mismatch
	}
	// A failure before the task exists: the extension answers with a tool
	// error (the server may answer any call without a task); 2025-11-25
	// asked for a CreateTaskResult, so it gets a JSON-RPC error.
	fail := func(msgText string) bool {
		if modern {
			b, _ := json.Marshal(tasktools.ErrorResult(msgText))
			writeRPC(w, msg.ID, b, nil, true)
		} else {
			writeRPC(w, msg.ID, nil, &rpcError{mcp.INTERNAL_ERROR, msgText}, false)
		}
		return true
	}
	call, err := s.identify(ctx, req)
	if err != nil {
		return fail(err.Error())
	}
	if !s.tasks.Running() {
		return fail(tasktools.RuntimeOff)
	}
	var ttl *int64
	var tp struct {
		TTL *int64 `json:"ttl"`
	}
	if json.Unmarshal(p.Task, &tp) == nil {
		ttl = tp.TTL
	}
	ctx, end := doorSpan(ctx, snap.Tracer(), call, tool)
	res, err := s.spec.svc.SubmitTool(ctx, rev, spectask.Caller{UserID: call.UserID, ThreadID: call.ThreadID, Secrets: call.Secrets},
		tasktools.DriverName(tool), tasktools.SubmitRequest(tool, call), ttl)
	end(err)
	switch {
	case errors.Is(err, spectask.ErrInvalidParams):
		writeRPC(w, msg.ID, nil, &rpcError{mcp.INVALID_PARAMS, taskText(err)}, modern)
		return true
	case err != nil:
		s.log.Warn("MCP task submit failed", "server", tool.Server, "user", call.UserID, "revision", rev.String(), "error", dispatch.Redact(err.Error()))
		return fail(tasktools.SubmitFailure(err))
	}
	if !modern {
		var created struct { // 2025-11-25: {task: Task}
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		_ = json.Unmarshal(res, &created)
		s.spec.track(sessionIDFrom(ctx), call.UserID, created.Task.TaskID)
	}
	writeRPC(w, msg.ID, res, nil, modern)
	return true
}

// listenTasks serves a 2026-07-28 subscriptions/listen naming taskIds: an
// SSE stream that acknowledges the task subscription and carries
// notifications/tasks for those tasks, each tagged with the subscription
// id, until the client cancels (closes the stream) or the door closes. A
// caller holds at most as many as it may hold sessions (429 beyond).
// The other notification types of the same request are not served on it.
func (s *Server) listenTasks(ctx context.Context, w http.ResponseWriter, r *http.Request, msg rpcMessage, p taskParams) {
	if e := checkTaskHeaders(r, msg, p); e != nil {
		writeRPC(w, msg.ID, nil, e, true)
		return
	}
	call, err := s.identify(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Meta: p.Meta}})
	if err != nil {
		writeRPC(w, msg.ID, nil, &rpcError{mcp.INVALID_PARAMS, err.Error()}, true)
		return
	}
	release, ok := s.spec.listen(call.UserID)
	if !ok {
		http.Error(w, fmt.Sprintf("too many task subscriptions: this caller already holds %d", s.spec.maxListens), http.StatusTooManyRequests)
		return
	}
	defer release()
	var id any
	_ = json.Unmarshal(msg.ID, &id)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.watchCtx, cancel)()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var mu sync.Mutex
	write := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", b); err != nil {
			cancel()
			return
		}
		_ = rc.Flush()
	}
	tag := map[string]any{mcp.MetaKeySubscriptionID: id}
	write(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "method": mcp.MethodNotificationSubscriptionsAcknowledged,
		"params": map[string]any{"notifications": map[string]any{"taskIds": p.Notifications.TaskIDs}, "_meta": tag}})
	_ = s.spec.svc.Watch(ctx, spectask.Rev20260728, spectask.Caller{UserID: call.UserID}, p.Notifications.TaskIDs, func(method string, params json.RawMessage) {
		var m map[string]any
		if json.Unmarshal(params, &m) != nil {
			return
		}
		meta, _ := m["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta[mcp.MetaKeySubscriptionID] = id
		m["_meta"] = meta
		write(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "method": method, "params": m})
	})
	if r.Context().Err() == nil { // the door closed: end the stream with its result
		write(map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": msg.ID, "result": map[string]any{"resultType": mcp.ResultTypeComplete, "_meta": tag}})
	}
}

// writeRPC writes a JSON-RPC response: result, or e. A 2026-07-28 result
// gets resultType "complete" unless it has one (a task creation's "task"),
// and a 2026-07-28 error its HTTP status, as mcp-go does for its own.
func writeRPC(w http.ResponseWriter, id json.RawMessage, result json.RawMessage, e *rpcError, modern bool) {
	status, resp := rpcResponse(id, result, e, modern)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp)
}

// rpcResponse is writeRPC's response and HTTP status.
func rpcResponse(id json.RawMessage, result json.RawMessage, e *rpcError, modern bool) (int, map[string]any) {
	status := http.StatusOK
	resp := map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id}
	if e != nil {
		resp["error"] = map[string]any{"code": e.code, "message": e.msg}
		if modern {
			switch e.code {
			case mcp.METHOD_NOT_FOUND:
				status = http.StatusNotFound
			case mcp.INVALID_PARAMS, mcp.HEADER_MISMATCH:
				status = http.StatusBadRequest
			}
		}
	} else {
		if modern {
			var obj map[string]json.RawMessage
			if json.Unmarshal(result, &obj) == nil && obj != nil {
				if _, ok := obj["resultType"]; !ok {
					obj["resultType"] = json.RawMessage(`"` + string(mcp.ResultTypeComplete) + `"`)
				}
				if b, err := json.Marshal(obj); err == nil {
					result = b
				}
			}
		}
		resp["result"] = result
	}
	return status, resp
}
