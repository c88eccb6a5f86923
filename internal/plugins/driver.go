package plugins

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/wasm"
)

// DefaultDriverTimeout is a task driver call's deadline when its entry sets
// no timeout_ms: a driver's call includes the upstream calls it makes
// through call_tool, so it gets more than an interceptor's second.
const DefaultDriverTimeout = 30 * time.Second

// CallToolFunc serves one driver call's call_tool requests: the host decides
// what the plugin may call and with whose credentials.
type CallToolFunc = wasm.CallToolFunc

// callToolKey carries a call's CallToolFunc in its context, to the Wasm
// host import and to the process carrier's host service.
type callToolKey struct{}

func withCallTool(ctx context.Context, f CallToolFunc) context.Context {
	return context.WithValue(ctx, callToolKey{}, f)
}

func callToolOf(ctx context.Context) CallToolFunc {
	f, _ := ctx.Value(callToolKey{}).(CallToolFunc)
	return f
}

// refuseCallTool answers a call_tool made outside any driver call.
func refuseCallTool(ctx context.Context, req *abi.CallToolRequest) abi.CallToolResponse {
	if f := callToolOf(ctx); f != nil {
		return f(ctx, req)
	}
	return abi.CallToolResponse{Error: "call_tool is not available here"}
}

// Driver is one loaded task driver plugin (Wasm module or process). Its
// calls are the ABI's task messages; the answer is checked to decode before
// it is returned, and a Wasm instance that traps, times out or answers
// garbage is discarded.
type Driver struct {
	Entry  Entry
	SHA256 string

	module  backend
	info    wasm.Info
	log     *slog.Logger
	observe CallObserver
}

// errRetryableAnswer stands for a driver answer with a retryable Error,
// for the observer.
var errRetryableAnswer = errors.New("the driver answered a retryable error")

// LoadDriver loads a task driver entry (kind wasm or process). Its calls
// default to DefaultDriverTimeout.
func (h *Host) LoadDriver(ctx context.Context, e Entry) (*Driver, error) {
	if err := isolationProblem(e.Kind, e.Isolate); err != nil {
		return nil, fmt.Errorf("%s: %w", e.Name, err)
	}
	if e.Timeout <= 0 {
		e.Timeout = DefaultDriverTimeout
	}
	log := h.log.With("plugin", e.Name)
	var (
		b    backend
		info wasm.Info
		sum  [32]byte
	)
	switch e.Kind {
	case KindWasm:
		code, s, err := readPlugin(e)
		if err != nil {
			return nil, err
		}
		sum = s
		m, err := h.rt.Load(ctx, code, wasm.ModuleOptions{
			Name: e.Name, Timeout: e.Timeout, MaxMemoryMB: e.MaxMemoryMB,
			PerUser: e.Isolate == IsolatePerUser,
			Grants:  wasm.Grants{Clock: e.Grants.Clock, Random: e.Grants.Random},
			// The call's own CallToolFunc travels in its context.
			CallTool: refuseCallTool,
		})
		if err != nil {
			return nil, err
		}
		b, info = m, m.Info()
	case KindProcess:
		code, s, err := readPlugin(e)
		if err != nil {
			return nil, err
		}
		sum = s
		p, pi, err := startProcess(ctx, e, log, true)
		if err != nil {
			return nil, err
		}
		b = p
		info = wasm.Info{Major: uint16(pi.Major), Minor: uint16(pi.Minor), Features: pi.Features & abi.KnownFeatures, Size: len(code)}
	default:
		return nil, fmt.Errorf("%s: a task driver must be a \"wasm\" or \"process\" plugin, not %q", e.Name, e.Kind)
	}
	if info.Features&abi.FeatureTaskDriver == 0 {
		b.Close()
		return nil, fmt.Errorf("%s: the plugin is not a task driver (it does not serve %s, %s and %s)", e.Name, abi.ExportTaskSubmit, abi.ExportTaskStatus, abi.ExportTaskCancel)
	}
	info.SHA256 = hex.EncodeToString(sum[:])
	return &Driver{Entry: e, SHA256: info.SHA256, module: b, info: info, log: log, observe: h.observe}, nil
}

// Info describes the loaded module or process.
func (d *Driver) Info() wasm.Info { return d.info }

// PID is a process driver's current process id (0 for Wasm or when not running).
func (d *Driver) PID() int {
	if proc, ok := d.module.(*process); ok {
		return proc.PID()
	}
	return 0
}

// Close releases the driver's instances or stops its process.
func (d *Driver) Close() { d.module.Close() }

// Submit sends a TaskSubmitRequest; callTool serves the plugin's call_tool
// requests during this call only.
func (d *Driver) Submit(ctx context.Context, req *abi.TaskSubmitRequest, callTool CallToolFunc) (abi.TaskDriverResponse, error) {
	var enc abi.Encoder
	req.Encode(&enc)
	return d.call(ctx, abi.ExportTaskSubmit, req.UserID, enc.Bytes(), callTool)
}

// Status sends a TaskReference to the status entry point.
func (d *Driver) Status(ctx context.Context, ref *abi.TaskReference, callTool CallToolFunc) (abi.TaskDriverResponse, error) {
	var enc abi.Encoder
	ref.Encode(&enc)
	return d.call(ctx, abi.ExportTaskStatus, ref.UserID, enc.Bytes(), callTool)
}

// Cancel sends a TaskReference to the cancel entry point.
func (d *Driver) Cancel(ctx context.Context, ref *abi.TaskReference, callTool CallToolFunc) (abi.TaskDriverResponse, error) {
	var enc abi.Encoder
	ref.Encode(&enc)
	return d.call(ctx, abi.ExportTaskCancel, ref.UserID, enc.Bytes(), callTool)
}

// CanAnswer reports whether the plugin declared FeatureTaskAnswer (ABI 1.1):
// a driver built before answers existed loads as before and takes none.
func (d *Driver) CanAnswer() bool { return d.info.Features&abi.FeatureTaskAnswer != 0 }

// Answer sends a TaskAnswerRequest to the answer entry point. A driver that
// did not declare FeatureTaskAnswer is not called.
func (d *Driver) Answer(ctx context.Context, req *abi.TaskAnswerRequest, callTool CallToolFunc) (abi.TaskDriverResponse, error) {
	if !d.CanAnswer() {
		return abi.TaskDriverResponse{}, fmt.Errorf("%s: the plugin does not take answers (it does not serve %s)", d.Entry.Name, abi.ExportTaskAnswer)
	}
	var enc abi.Encoder
	req.Encode(&enc)
	return d.call(ctx, abi.ExportTaskAnswer, req.Task.UserID, enc.Bytes(), callTool)
}

// call runs one entry point. A carrier failure (trap, timeout, crash,
// undecodable answer) is an error naming the plugin, never its output.
func (d *Driver) call(ctx context.Context, export, user string, in []byte, callTool CallToolFunc) (abi.TaskDriverResponse, error) {
	var resp abi.TaskDriverResponse
	if callTool == nil {
		callTool = func(context.Context, *abi.CallToolRequest) abi.CallToolResponse {
			return abi.CallToolResponse{Error: "call_tool is not available here"}
		}
	}
	start := time.Now()
	_, err := d.module.CallChecked(withCallTool(ctx, callTool), export, user, in, func(out []byte) error {
		return resp.Decode(out)
	})
	var failed error
	if err == nil && resp.Error != "" && !resp.Retryable {
		failed = errors.New(resp.Error)
	} else if err == nil && resp.Error != "" {
		failed = errRetryableAnswer
	}
	if d.observe != nil {
		d.observe(d.Entry.Name, RoleDriver, d.Entry.Kind, errors.Join(err, failed), time.Since(start))
	}
	if err != nil {
		d.log.Warn("task driver call failed", "entry", export, "error", err.Error())
		return abi.TaskDriverResponse{}, err
	}
	return resp, nil
}
