// Command tasks2026 is a real MCP server for the 2026-07-28 tasks extension
// (SEP-2663, io.modelcontextprotocol/tasks), which no published server
// implements yet. It declares the extension in server/discover and decides
// per call, as the extension lets a server do:
//
//	long_job   {topic, duration_ms?, ask?, inline?, fail_rpc?, tool_error?,
//	            ignore_cancel?, poll_ms?, ttl_ms?}
//	           → a task handle (resultType "task"), or with inline: true the
//	             report itself; without the extension declared on the request
//	             -32021 (Missing Required Client Capability)
//	echo       {text}  → the text, always answered inline
//	job_stats  {}      → {creates, inline, gets, updates_applied,
//	                      updates_ignored, cancels}
//
// and serves tasks/get (the result, the JSON-RPC error or the inputRequests
// inlined), tasks/update (inputResponses, each input request answered at
// most once: a response to a request no longer outstanding is ignored, so a
// resent update applies once) and tasks/cancel (an acknowledgement; with
// ignore_cancel the job runs on and completes). A job works for duration_ms
// (default 300); with ask it first asks for the report's format
// (inputRequests {"format": elicitation/create}) and works once answered.
// fail_rpc ends it failed with a JSON-RPC error, tool_error completed with
// an isError result. pollIntervalMs is poll_ms (default 500); after ttl_ms
// (default 600000) the task is forgotten (tasks/get: -32602).
//
// Over streamable HTTP tasks/* must carry Mcp-Name with the task id, as the
// extension requires of clients; a request without it is refused (-32020).
//
// Usage:
//
//	tasks2026 [-transport stdio|http] [-listen 127.0.0.1:0] [-name tasks2026] [-state jobs.json]
//
// With -state, jobs and counters are written to the file after each change
// and read back at start, so a stdio server a restarted host starts anew
// resumes them. With -transport http it prints one line once its listener
// is bound ("listening on http://127.0.0.1:41234", endpoint /mcp).
// Diagnostics go to stderr.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/examples/internal/mcpserve"
)

const serverVersion = "0.1.0"

// extension is the tasks extension's identifier.
const extension = "io.modelcontextprotocol/tasks"

// Tool names.
const (
	toolJob   = "long_job"
	toolEcho  = "echo"
	toolStats = "job_stats"
)

// formatKey is the key of the job's one input request.
const formatKey = "format"

// JSON-RPC error codes.
const (
	codeInvalidParams     = -32602
	codeInternal          = -32603
	codeHeaderMismatch    = -32020
	codeMissingCapability = -32021
)

type config struct {
	transport, listen, name, state string
}

func main() { mcpserve.Main("tasks2026", parseFlags, run) }

func parseFlags(args []string, errOut io.Writer) (config, error) {
	fs := flag.NewFlagSet("tasks2026", flag.ContinueOnError)
	fs.SetOutput(errOut)
	var cfg config
	fs.StringVar(&cfg.transport, "transport", mcpserve.Stdio, "transport: stdio or http (streamable HTTP at /mcp)")
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:0", "listen address for the http transport")
	fs.StringVar(&cfg.name, "name", "tasks2026", "server name advertised to clients")
	fs.StringVar(&cfg.state, "state", "", "JSON file that keeps jobs and counters across restarts (\"\": memory only)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if cfg.transport != mcpserve.Stdio && cfg.transport != mcpserve.HTTP {
		return config{}, fmt.Errorf("unknown -transport %q: want stdio or http", cfg.transport)
	}
	return cfg, nil
}

func run(ctx context.Context, cfg config, stdin io.Reader, stdout io.Writer, logger *log.Logger) error {
	jobs, err := openJobs(cfg.state)
	if err != nil {
		return err
	}
	srv := newServer(cfg.name, jobs)
	h := &handler{jobs: jobs}
	if cfg.transport == mcpserve.HTTP {
		return mcpserve.Serve(ctx, srv, mcpserve.Options{Transport: cfg.transport, Listen: cfg.listen, Stdout: stdout, Logger: logger, WrapHTTP: h.wrapHTTP})
	}
	// Over stdio the task methods (and long_job's calls) are answered here;
	// every other line goes on to mcp-go, both writing whole lines to out.
	out := &lockedWriter{w: stdout}
	pr, pw := io.Pipe()
	go func() {
		r := bufio.NewReader(stdin)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				if resp, _, ok := h.intercept(bytes.TrimSpace(line), nil); ok {
					_, _ = out.Write(append(resp, '\n'))
				} else if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.Close()
				return
			}
		}
	}()
	return mcpserve.Serve(ctx, srv, mcpserve.Options{Transport: cfg.transport, Stdin: pr, Stdout: out, Logger: logger})
}

// newServer is the mcp-go server: discovery (the extension declared), the
// tool list, echo and job_stats. long_job's calls never reach it.
func newServer(name string, jobs *jobs) *server.MCPServer {
	srv := server.NewMCPServer(name, serverVersion, server.WithToolCapabilities(false),
		server.WithExtensions(map[string]any{extension: map[string]any{}}))
	srv.AddTool(mcp.NewTool(toolJob,
		mcp.WithDescription("Writes a report on a topic as a background task (the server runs it as a task of the io.modelcontextprotocol/tasks extension)."),
		mcp.WithString("topic", mcp.Required(), mcp.Description("What the report is about.")),
		mcp.WithNumber("duration_ms", mcp.Description("How long the job works (default 300).")),
		mcp.WithBoolean("ask", mcp.Description("Ask for the report's format first (input_required).")),
		mcp.WithBoolean("inline", mcp.Description("Answer with the report at once instead of a task.")),
		mcp.WithBoolean("fail_rpc", mcp.Description("End failed with a JSON-RPC error.")),
		mcp.WithBoolean("tool_error", mcp.Description("End completed with an isError result.")),
		mcp.WithBoolean("ignore_cancel", mcp.Description("Acknowledge tasks/cancel but run to completion.")),
		mcp.WithNumber("poll_ms", mcp.Description("pollIntervalMs to advertise (default 500).")),
		mcp.WithNumber("ttl_ms", mcp.Description("ttlMs: the task is forgotten this long after creation (default 600000).")),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError(toolJob + " is answered by the task layer"), nil
	})
	srv.AddTool(mcp.NewTool(toolEcho, mcp.WithDescription("Echoes text; always answered inline."),
		mcp.WithString("text", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	srv.AddTool(mcp.NewTool(toolStats, mcp.WithDescription("Counts the task requests the server received.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			st := jobs.statsCopy()
			b, _ := json.Marshal(st)
			return mcp.NewToolResultStructured(st, string(b)), nil
		})
	return srv
}

// lockedWriter writes each line whole, from mcp-go and from the task layer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// handler is the task layer in front of mcp-go.
type handler struct{ jobs *jobs }

// wrapHTTP answers the task methods and long_job's calls of a streamable
// HTTP POST, and passes everything else to mcp-go.
func (h *handler) wrapHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if resp, status, ok := h.intercept(body, r.Header.Get); ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(resp)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// rpcRequest is a JSON-RPC request as the task layer reads it.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// params are the fields of the requests the task layer answers.
type params struct {
	Name      string `json:"name"`
	Arguments struct {
		Topic        string  `json:"topic"`
		DurationMs   float64 `json:"duration_ms"`
		Ask          bool    `json:"ask"`
		Inline       bool    `json:"inline"`
		FailRPC      bool    `json:"fail_rpc"`
		ToolError    bool    `json:"tool_error"`
		IgnoreCancel bool    `json:"ignore_cancel"`
		PollMs       float64 `json:"poll_ms"`
		TTLMs        float64 `json:"ttl_ms"`
	} `json:"arguments"`
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	Meta           struct {
		Capabilities struct {
			Extensions map[string]json.RawMessage `json:"extensions"`
		} `json:"io.modelcontextprotocol/clientCapabilities"`
	} `json:"_meta"`
}

// declared reports whether the request declared the extension.
func (p params) declared() bool {
	_, ok := p.Meta.Capabilities.Extensions[extension]
	return ok
}

// intercept answers raw if it is a task request or a call of long_job;
// header is the HTTP request's (nil on stdio). status is the HTTP status.
func (h *handler) intercept(raw []byte, header func(string) string) (resp []byte, status int, ok bool) {
	var req rpcRequest
	if json.Unmarshal(raw, &req) != nil || len(req.ID) == 0 {
		return nil, 0, false
	}
	var p params
	switch req.Method {
	case "tools/call":
		if json.Unmarshal(req.Params, &p) != nil || p.Name != toolJob {
			return nil, 0, false
		}
	case "tasks/get", "tasks/update", "tasks/cancel":
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return rpcError(req.ID, codeInvalidParams, "invalid params: "+err.Error(), nil), http.StatusOK, true
		}
		if header != nil {
			name, _ := mcp.DecodeHeaderValue(header(mcp.HeaderName))
			if name != p.TaskID {
				return rpcError(req.ID, codeHeaderMismatch, fmt.Sprintf("%s must carry Mcp-Name set to params.taskId", req.Method), nil), http.StatusBadRequest, true
			}
		}
	default:
		return nil, 0, false
	}
	if !p.declared() {
		return rpcError(req.ID, codeMissingCapability, "Missing required client capability",
			map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{extension: map[string]any{}}}}), http.StatusOK, true
	}
	var result map[string]any
	var err *rpcErr
	switch req.Method {
	case "tools/call":
		result, err = h.jobs.call(p)
	case "tasks/get":
		result, err = h.jobs.get(p.TaskID)
	case "tasks/update":
		result, err = h.jobs.update(p.TaskID, p.InputResponses)
	case "tasks/cancel":
		result, err = h.jobs.cancel(p.TaskID)
	}
	if err != nil {
		return rpcError(req.ID, err.code, err.msg, nil), http.StatusOK, true
	}
	if _, set := result["resultType"]; !set {
		result["resultType"] = "complete"
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	return b, http.StatusOK, true
}

func rpcError(id json.RawMessage, code int, msg string, data any) []byte {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
	return b
}

type rpcErr struct {
	code int
	msg  string
}

// job is one task's state; it is derived from the clock on each read.
type job struct {
	ID           string          `json:"id"`
	Topic        string          `json:"topic"`
	Created      time.Time       `json:"created"`
	Duration     time.Duration   `json:"duration"`
	TTL          time.Duration   `json:"ttl"`
	PollMs       int64           `json:"poll_ms"`
	Ask          bool            `json:"ask"`
	FailRPC      bool            `json:"fail_rpc"`
	ToolError    bool            `json:"tool_error"`
	IgnoreCancel bool            `json:"ignore_cancel"`
	Answered     bool            `json:"answered"`
	Action       string          `json:"action,omitempty"`
	Content      json.RawMessage `json:"content,omitempty"`
	Resumed      time.Time       `json:"resumed"`
	Cancelled    bool            `json:"cancelled"`
	CancelledAt  time.Time       `json:"cancelled_at"`
}

// Stats are the counters job_stats reports.
type Stats struct {
	Creates        int `json:"creates"`
	Inline         int `json:"inline"`
	Gets           int `json:"gets"`
	UpdatesApplied int `json:"updates_applied"`
	UpdatesIgnored int `json:"updates_ignored"`
	Cancels        int `json:"cancels"`
}

// jobs is the server's task store, optionally kept in a file.
type jobs struct {
	mu    sync.Mutex
	path  string
	Jobs  map[string]*job `json:"jobs"`
	Stats Stats           `json:"stats"`
}

func openJobs(path string) (*jobs, error) {
	j := &jobs{path: path, Jobs: map[string]*job{}}
	if path == "" {
		return j, nil
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return j, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(b, j); err != nil {
		return nil, fmt.Errorf("read state %s: %w", path, err)
	}
	if j.Jobs == nil {
		j.Jobs = map[string]*job{}
	}
	return j, nil
}

// save writes the state file (under mu), atomically.
func (j *jobs) save() {
	if j.path == "" {
		return
	}
	b, _ := json.Marshal(j)
	_ = os.MkdirAll(filepath.Dir(j.path), 0o700)
	tmp := j.path + ".tmp"
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, j.path)
	}
}

func (j *jobs) statsCopy() Stats {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.Stats
}

// call starts long_job: a task, or with inline the report at once.
func (j *jobs) call(p params) (map[string]any, *rpcErr) {
	a := p.Arguments
	if a.Topic == "" {
		return nil, &rpcErr{codeInvalidParams, "topic is required"}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if a.Inline {
		j.Stats.Inline++
		j.save()
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": report(a.Topic, "")}}}, nil
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	jb := &job{ID: hex.EncodeToString(b), Topic: a.Topic, Created: time.Now(), Duration: 300 * time.Millisecond,
		TTL: 10 * time.Minute, PollMs: 500, Ask: a.Ask, FailRPC: a.FailRPC, ToolError: a.ToolError, IgnoreCancel: a.IgnoreCancel}
	if a.DurationMs > 0 {
		jb.Duration = time.Duration(a.DurationMs * float64(time.Millisecond))
	}
	if a.TTLMs > 0 {
		jb.TTL = time.Duration(a.TTLMs * float64(time.Millisecond))
	}
	if a.PollMs > 0 {
		jb.PollMs = int64(a.PollMs)
	}
	j.Jobs[jb.ID] = jb
	j.Stats.Creates++
	j.save()
	t := jb.task(time.Now(), false)
	t["resultType"] = "task"
	return t, nil
}

// find is the job id names, or -32602 (unknown or expired); under mu.
func (j *jobs) find(id string) (*job, *rpcErr) {
	jb, ok := j.Jobs[id]
	if !ok {
		return nil, &rpcErr{codeInvalidParams, "Failed to retrieve task: Task not found"}
	}
	if time.Now().After(jb.Created.Add(jb.TTL)) {
		delete(j.Jobs, id)
		j.save()
		return nil, &rpcErr{codeInvalidParams, "Failed to retrieve task: Task has expired"}
	}
	return jb, nil
}

func (j *jobs) get(id string) (map[string]any, *rpcErr) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.Stats.Gets++
	jb, err := j.find(id)
	if err != nil {
		j.save()
		return nil, err
	}
	j.save()
	return jb.task(time.Now(), true), nil
}

// update applies the responses to outstanding input requests and ignores
// the rest (unknown keys, requests answered already).
func (j *jobs) update(id string, responses map[string]json.RawMessage) (map[string]any, *rpcErr) {
	j.mu.Lock()
	defer j.mu.Unlock()
	jb, err := j.find(id)
	if err != nil {
		return nil, err
	}
	for key, raw := range responses {
		if key != formatKey || !jb.Ask || jb.Answered || jb.Cancelled {
			j.Stats.UpdatesIgnored++
			continue
		}
		var r struct {
			Action  string          `json:"action"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &r) != nil || (r.Action != "accept" && r.Action != "decline" && r.Action != "cancel") {
			return nil, &rpcErr{codeInvalidParams, "inputResponses." + key + " must be an elicitation result"}
		}
		jb.Answered, jb.Action, jb.Content, jb.Resumed = true, r.Action, r.Content, time.Now()
		if r.Action == "cancel" {
			jb.Cancelled, jb.CancelledAt = true, jb.Resumed
		}
		j.Stats.UpdatesApplied++
	}
	j.save()
	return map[string]any{}, nil
}

// cancel acknowledges; the job ends cancelled unless it ignores the request
// or has ended already.
func (j *jobs) cancel(id string) (map[string]any, *rpcErr) {
	j.mu.Lock()
	defer j.mu.Unlock()
	jb, err := j.find(id)
	if err != nil {
		return nil, err
	}
	j.Stats.Cancels++
	now := time.Now()
	if st, _ := jb.state(now); st != "completed" && st != "failed" && !jb.IgnoreCancel {
		jb.Cancelled, jb.CancelledAt = true, now
	}
	j.save()
	return map[string]any{}, nil
}

// state is the job's status and status message at now.
func (jb *job) state(now time.Time) (string, string) {
	switch {
	case jb.Cancelled:
		return "cancelled", "Cancelled by request"
	case jb.Ask && !jb.Answered:
		return "input_required", "Waiting for the report's format"
	}
	start := jb.Created
	if jb.Ask {
		start = jb.Resumed
	}
	if now.Before(start.Add(jb.Duration)) {
		return "working", "Writing the report on " + jb.Topic
	}
	if jb.FailRPC {
		return "failed", "Tool execution failed: the report backend is down"
	}
	return "completed", ""
}

// task is the job's Task; detailed adds the inlined result, error or
// inputRequests (a DetailedTask).
func (jb *job) task(now time.Time, detailed bool) map[string]any {
	status, msg := jb.state(now)
	updated := jb.Created
	switch status {
	case "cancelled":
		updated = jb.CancelledAt
	case "working":
		if jb.Ask {
			updated = jb.Resumed
		}
	case "completed", "failed":
		start := jb.Created
		if jb.Ask {
			start = jb.Resumed
		}
		updated = start.Add(jb.Duration)
	}
	t := map[string]any{
		"taskId": jb.ID, "status": status, "statusMessage": msg,
		"createdAt": jb.Created.UTC().Format(time.RFC3339Nano), "lastUpdatedAt": updated.UTC().Format(time.RFC3339Nano),
		"ttlMs": jb.TTL.Milliseconds(), "pollIntervalMs": jb.PollMs,
	}
	if !detailed {
		return t
	}
	switch status {
	case "input_required":
		t["inputRequests"] = map[string]any{formatKey: map[string]any{
			"method": "elicitation/create",
			"params": map[string]any{
				"mode":    "form",
				"message": "Which format should the report on " + jb.Topic + " have?",
				"requestedSchema": map[string]any{"type": "object",
					"properties": map[string]any{"format": map[string]any{"type": "string", "enum": []string{"markdown", "pdf", "slides"}}},
					"required":   []string{"format"}},
			},
		}}
	case "completed":
		if jb.ToolError {
			t["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "quota exceeded for " + jb.Topic}}, "isError": true}
		} else {
			t["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": report(jb.Topic, jb.format())}}, "isError": false}
		}
	case "failed":
		t["error"] = map[string]any{"code": codeInternal, "message": "the report backend is down"}
	}
	return t
}

// format is the answer the job got: the format accepted, or how the user
// declined.
func (jb *job) format() string {
	if !jb.Answered {
		return ""
	}
	if jb.Action == "decline" {
		return "(declined)"
	}
	var c struct {
		Format string `json:"format"`
	}
	_ = json.Unmarshal(jb.Content, &c)
	return c.Format
}

// report is the job's result text.
func report(topic, format string) string {
	s := "# Report: " + topic + "\n"
	if format != "" {
		s += "Format: " + format + "\n"
	}
	return s
}
