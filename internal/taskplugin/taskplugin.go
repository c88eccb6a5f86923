// Package taskplugin runs a task toolset's plugin driver, or a server's
// driver of its MCP task tools (a Wasm module or a go-plugin process
// speaking the ABI's task messages), as a task.Driver. The
// plugin keeps its own opaque driver data, which the store persists, and
// reaches upstream tools only through the host's call_tool, which this
// package scopes to the task's server, user and thread and sends through the
// same caller (and so the same credential chain) as the ordinary driver.
// Every failure of the plugin itself (a trap, a timeout, a crash, an answer
// that does not decode or does not make sense, a call_tool outside its
// scope) is a retryable error: the poll fails under its lease and the task
// is neither lost nor written.
package taskplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"sync/atomic"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
)

// NamePrefix starts every plugin driver's registry name.
const NamePrefix = "plugin:"

// Name is the registry name of the plugin driver of server's task toolset:
// stable across restarts (tasks in the store name it) and short enough for
// the driver_name column.
func Name(server, toolset string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + toolset))
	return NamePrefix + hex.EncodeToString(sum[:12])
}

// ServerDriverName is the registry name of a server's own plugin driver
// (mcpServers.<name>.driver), which runs its MCP task tools' tasks. A
// toolset's name is never empty, so it is never a toolset driver's name.
func ServerDriverName(server string) string { return Name(server, "") }

// DriverName is the driver of a task toolset's tasks: its plugin driver
// when it names one, else the ordinary driver.
func DriverName(server string, ts *config.TaskToolset) string {
	if ts != nil && len(ts.Driver) > 0 {
		return Name(server, ts.Name)
	}
	return ordinary.Name
}

// ErrScope is what a call_tool outside the task's scope is refused with; the
// driver call it happened in fails (retryably) whatever the plugin answers.
var ErrScope = errors.New("the task driver called outside its task's scope")

// Driver is a task.Driver over a loaded plugin.
type Driver struct {
	plugin *plugins.Driver
	caller ordinary.ToolCaller
	log    *slog.Logger
}

var (
	_ task.Driver        = (*Driver)(nil)
	_ task.Answerer      = (*Driver)(nil)
	_ task.AnswerChecker = (*Driver)(nil)
)

// New returns the driver of plugin, whose upstream calls go through caller.
func New(plugin *plugins.Driver, caller ordinary.ToolCaller, log *slog.Logger) *Driver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Driver{plugin: plugin, caller: caller, log: log.With("plugin", plugin.Entry.Name)}
}

// Plugin is the loaded plugin.
func (d *Driver) Plugin() *plugins.Driver { return d.plugin }

// scope is one driver call's call_tool: bound to a server, a user and a
// thread; per-request credentials only for submit.
type scope struct {
	d                   *Driver
	server, user, thead string
	submit              bool
	secrets             map[string]string
	violated            atomic.Bool
}

func (s *scope) callTool(ctx context.Context, req *abi.CallToolRequest) abi.CallToolResponse {
	switch {
	case req.Server != s.server,
		req.UserID != "" && req.UserID != s.user,
		req.ThreadID != "" && req.ThreadID != s.thead,
		req.RequestScopedHeaders && !s.submit:
		s.violated.Store(true)
		s.d.log.Warn("task driver call_tool refused: outside its task's scope", "server", s.server, "asked_server", req.Server)
		return abi.CallToolResponse{Error: "the host refused the call: this task is bound to server '" + s.server + "' and its owner"}
	case req.Tool == "":
		return abi.CallToolResponse{Error: "the host refused the call: no tool named"}
	}
	args := json.RawMessage(req.Arguments)
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	call := ordinary.ToolCall{
		Server: s.server, Tool: req.Tool, Arguments: append(json.RawMessage(nil), args...),
		UserID: s.user, ThreadID: s.thead,
	}
	if s.submit && req.RequestScopedHeaders {
		call.RequestScopedHeaders, call.Secrets = true, s.secrets
	}
	raw, err := s.d.caller.CallTool(ctx, call)
	if err != nil {
		return abi.CallToolResponse{Error: task.Truncate(dispatch.Redact(err.Error()), task.MaxPublicErrorChars)}
	}
	return abi.CallToolResponse{Result: raw}
}

// failed is a plugin failure: retryable, naming the plugin, never its text.
func (d *Driver) failed(op string, err error) error {
	return fmt.Errorf("MCP task driver '%s' %s failed: %w", d.plugin.Entry.Name, op, err)
}

// answer turns a plugin's answer into an error when it reports one: a
// retryable error is retried, any other fails the task. The plugin's own
// text is kept (it is the driver's, like a remote's task error).
func (d *Driver) answer(op string, s *scope, resp abi.TaskDriverResponse, err error) error {
	if err != nil {
		return d.failed(op, err)
	}
	if s.violated.Load() {
		return d.failed(op, ErrScope)
	}
	if resp.Error == "" {
		return nil
	}
	msg := fmt.Sprintf("MCP task driver '%s' %s: %s", d.plugin.Entry.Name, op, task.Truncate(resp.Error, task.MaxToolErrorDetailChars))
	if resp.Retryable {
		return errors.New(msg)
	}
	return task.NewProtocolError(msg)
}

// Submit sends the submit message. The plugin's driver data replaces the
// request's when it answers one; else the request's is kept.
func (d *Driver) Submit(ctx context.Context, req task.SubmitRequest) (task.Submission, error) {
	if err := req.Validate(); err != nil {
		return task.Submission{}, err
	}
	data, err := encodeData(req.DriverData)
	if err != nil {
		return task.Submission{}, err
	}
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	s := &scope{d: d, server: req.ServerName, user: req.UserID, thead: req.ThreadID, submit: true, secrets: req.Secrets}
	resp, err := d.plugin.Submit(ctx, &abi.TaskSubmitRequest{
		UserID: req.UserID, ThreadID: req.ThreadID, RunID: req.RunID, ToolCallID: req.ToolCallID,
		ServerName: req.ServerName, TaskName: req.TaskName, Arguments: args, DriverData: data, LocalTaskID: req.LocalTaskID,
	}, s.callTool)
	if err := d.answer("submit", s, resp, err); err != nil {
		return task.Submission{}, err
	}
	sub := task.Submission{RemoteTaskID: resp.RemoteTaskID, State: task.State{Status: task.StatusSubmitted}, DriverData: maps.Clone(req.DriverData)}
	if resp.Snapshot != nil {
		if sub.State, err = snapshot(resp.Snapshot); err != nil {
			return task.Submission{}, d.failed("submit", err)
		}
	}
	if resp.DriverData != nil {
		if sub.DriverData, err = decodeData(resp.DriverData); err != nil {
			return task.Submission{}, d.failed("submit", err)
		}
	}
	if sub.DriverData == nil {
		sub.DriverData = map[string]string{}
	}
	if err := sub.Validate(); err != nil {
		return task.Submission{}, d.failed("submit", err)
	}
	return sub, nil
}

// Status sends the status message.
func (d *Driver) Status(ctx context.Context, ref task.Reference) (task.State, error) {
	return d.poll(ctx, "status", ref, d.plugin.Status)
}

// Cancel sends the cancel message; the service requires a terminal answer.
func (d *Driver) Cancel(ctx context.Context, ref task.Reference) (task.State, error) {
	return d.poll(ctx, "cancel", ref, d.plugin.Cancel)
}

// CanAnswer reports whether the plugin takes answers: it declared
// abi.FeatureTaskAnswer (a driver built for ABI 1.0 did not).
func (d *Driver) CanAnswer(task.Reference) bool { return d.plugin.CanAnswer() }

// Answer sends the answer message: the task, its stored question and the
// user's answer with its id (the remote's idempotency key: the service may
// deliver one answer twice). The reply is the task's snapshot, checked as a
// status reply is; an error the plugin reports without retryable refuses
// the answer, and every failure of the plugin itself is retried.
func (d *Driver) Answer(ctx context.Context, ref task.Reference, question json.RawMessage, a task.Answer) (task.State, error) {
	if !d.plugin.CanAnswer() {
		return task.State{}, task.NewProtocolError(fmt.Sprintf("MCP task driver '%s' does not take answers", d.plugin.Entry.Name))
	}
	return d.poll(ctx, "answer", ref, func(ctx context.Context, r *abi.TaskReference, callTool plugins.CallToolFunc) (abi.TaskDriverResponse, error) {
		req := &abi.TaskAnswerRequest{Task: *r, Question: question, Action: a.Action, AnswerID: a.ID}
		if len(a.Content) > 0 {
			req.Content = a.Content
		}
		return d.plugin.Answer(ctx, req, callTool)
	})
}

func (d *Driver) poll(ctx context.Context, op string, ref task.Reference,
	send func(context.Context, *abi.TaskReference, plugins.CallToolFunc) (abi.TaskDriverResponse, error)) (task.State, error) {
	data, err := encodeData(ref.DriverData)
	if err != nil {
		return task.State{}, err
	}
	s := &scope{d: d, server: ref.ServerName, user: ref.UserID, thead: ref.ThreadID}
	resp, err := send(ctx, &abi.TaskReference{
		LocalTaskID: ref.LocalTaskID, UserID: ref.UserID, ThreadID: ref.ThreadID,
		ServerName: ref.ServerName, RemoteTaskID: ref.RemoteTaskID, DriverData: data,
	}, s.callTool)
	if err := d.answer(op, s, resp, err); err != nil {
		return task.State{}, err
	}
	if resp.Snapshot == nil {
		return task.State{}, d.failed(op, errors.New("the answer has no snapshot"))
	}
	snap, err := snapshot(resp.Snapshot)
	if err != nil {
		return task.State{}, d.failed(op, err)
	}
	return snap, nil
}

// snapshot converts and checks an ABI snapshot. A snapshot that does not
// validate is the plugin's fault, not the remote's: the caller retries.
func snapshot(s *abi.TaskSnapshot) (task.State, error) {
	out := task.State{
		Status: task.Status(s.Status), ResultTruncated: s.ResultTruncated, Error: s.Error,
	}
	if s.Result != nil {
		if !json.Valid(s.Result) {
			return task.State{}, errors.New("result is not JSON")
		}
		out.Result = append(json.RawMessage(nil), s.Result...)
	}
	if s.InputRequired != nil {
		out.InputRequired = append(json.RawMessage(nil), s.InputRequired...)
	}
	if s.ResultPreview != "" {
		p := s.ResultPreview
		out.ResultPreview = &p
	}
	if len(s.ResultArtifact) > 0 {
		out.ResultArtifact = map[string]string{}
		for _, h := range s.ResultArtifact {
			out.ResultArtifact[h.Name] = h.Value
		}
	}
	if s.HasPollAfter {
		if math.IsNaN(s.PollAfterSeconds) || math.IsInf(s.PollAfterSeconds, 0) || s.PollAfterSeconds <= 0 {
			return task.State{}, errors.New("poll_after_seconds must be a finite positive number")
		}
		p := min(s.PollAfterSeconds, task.MaxPollAfterSeconds)
		out.PollAfterSeconds = &p
	}
	if err := out.Validate(); err != nil {
		return task.State{}, err
	}
	return out, nil
}

// encodeData is driver data as the ABI carries it: a JSON object of strings.
func encodeData(m map[string]string) ([]byte, error) {
	if m == nil {
		m = map[string]string{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode driver data: %w", err)
	}
	return b, nil
}

// decodeData reads a plugin's driver data: a JSON object of strings.
func decodeData(b []byte) (map[string]string, error) {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, errors.New("driver_data must be a JSON object of strings")
	}
	return m, nil
}
