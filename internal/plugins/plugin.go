package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/wasm"
)

// Plugin is one loaded interceptor.
type Plugin struct {
	Entry Entry
	// SHA256 of the plugin file as loaded.
	SHA256 string

	module  backend
	info    wasm.Info
	log     *slog.Logger
	encs    sync.Pool
	observe CallObserver
}

// backend carries messages to a Wasm module or a plugin process.
type backend interface {
	// CallChecked sends in and returns the answer after check accepted it;
	// a Wasm instance whose answer fails check is discarded.
	CallChecked(ctx context.Context, export, key string, in []byte, check func([]byte) error) ([]byte, error)
	Close()
}

// A Wasm module is a backend as it is; extism.go and process.go hold the others.
var _ backend = (*wasm.Module)(nil)

// Host loads plugins; it owns the Wasm runtime shared by all of them.
type Host struct {
	rt  *wasm.Runtime
	log *slog.Logger
	// observe is told every plugin call (see Observe).
	observe CallObserver
}

// CallObserver is told each call of a plugin loaded from entry (its place
// in the configuration, e.g. mcpInterceptors[0]) as role ("interceptor" or
// "driver"), of kind (wasm, process), with its failure (a trap, a timeout,
// a malformed answer or one with Error set; nil otherwise) and duration.
// It runs on the caller's goroutine and must not block.
type CallObserver func(entry, role, kind string, err error, d time.Duration)

// Observe makes o see every call of the plugins loaded after it.
func (h *Host) Observe(o CallObserver) { h.observe = o }

// NewHost returns a plugin host whose compiled Wasm is cached in cacheDir
// ("" keeps it in memory).
func NewHost(cacheDir string, log *slog.Logger) (*Host, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rt, err := wasm.NewRuntime(wasm.RuntimeOptions{CacheDir: cacheDir, Logger: log})
	if err != nil {
		return nil, err
	}
	return &Host{rt: rt, log: log}, nil
}

// Close releases the runtime and every module.
func (h *Host) Close(ctx context.Context) error { return h.rt.Close(ctx) }

// ErrUnsupportedKind is wrapped for plugin kinds this build cannot load yet.
var ErrUnsupportedKind = errors.New("unsupported plugin kind")

// Load loads one entry. Errors name the entry.
func (h *Host) Load(ctx context.Context, e Entry) (*Plugin, error) {
	if err := isolationProblem(e.Kind, e.Isolate); err != nil {
		return nil, fmt.Errorf("%s: %w", e.Name, err)
	}
	switch e.Kind {
	case KindWasm:
	case KindProcess:
		return h.loadProcess(ctx, e)
	case KindExtism:
		return h.loadExtismPlugin(ctx, e)
	default:
		return nil, fmt.Errorf("%s: %w %q (this build loads \"wasm\", \"process\" and \"extism\" plugins)", e.Name, ErrUnsupportedKind, e.Kind)
	}
	code, sum, err := readPlugin(e)
	if err != nil {
		return nil, err
	}
	m, err := h.rt.Load(ctx, code, wasm.ModuleOptions{
		Name:        e.Name,
		Timeout:     e.Timeout,
		MaxMemoryMB: e.MaxMemoryMB,
		PerUser:     e.Isolate == IsolatePerUser,
		Grants:      wasm.Grants{Clock: e.Grants.Clock, Random: e.Grants.Random},
	})
	if err != nil {
		return nil, err
	}
	if m.Info().Features&(abi.FeatureIntercept|abi.FeatureResultHook) == 0 {
		m.Close()
		return nil, fmt.Errorf("%s: the module is not an interceptor (it exports neither %s nor %s)", e.Name, abi.ExportIntercept, abi.ExportOnResult)
	}
	return &Plugin{Entry: e, SHA256: hex.EncodeToString(sum[:]), module: m, info: m.Info(), log: h.log.With("plugin", e.Name), observe: h.observe}, nil
}

// loadExtismPlugin loads a module written against an Extism PDK.
func (h *Host) loadExtismPlugin(ctx context.Context, e Entry) (*Plugin, error) {
	return h.loadCarrier(e, func(code []byte, log *slog.Logger) (backend, abi.Info, error) {
		return h.loadExtism(ctx, e, code, log)
	})
}

// loadProcess starts a process plugin and checks what it serves.
func (h *Host) loadProcess(ctx context.Context, e Entry) (*Plugin, error) {
	return h.loadCarrier(e, func(_ []byte, log *slog.Logger) (backend, abi.Info, error) {
		return startProcess(ctx, e, log, false)
	})
}

// loadCarrier reads the entry's file, starts its carrier and checks that it
// serves an interceptor entry point.
func (h *Host) loadCarrier(e Entry, start func(code []byte, log *slog.Logger) (backend, abi.Info, error)) (*Plugin, error) {
	code, sum, err := readPlugin(e)
	if err != nil {
		return nil, err
	}
	log := h.log.With("plugin", e.Name)
	b, info, err := start(code, log)
	if err != nil {
		return nil, err
	}
	if info.Features&(abi.FeatureIntercept|abi.FeatureResultHook) == 0 {
		b.Close()
		return nil, fmt.Errorf("%s: the plugin is not an interceptor (it serves neither intercept nor on_result)", e.Name)
	}
	digest := hex.EncodeToString(sum[:])
	return &Plugin{Entry: e, SHA256: digest, module: b, log: log, observe: h.observe, info: wasm.Info{
		Major: uint16(info.Major), Minor: uint16(info.Minor), Features: info.Features & abi.KnownFeatures, Size: len(code), SHA256: digest,
	}}, nil
}

// readPlugin reads an entry's file and its SHA-256; errors name the entry.
func readPlugin(e Entry) ([]byte, [32]byte, error) {
	code, err := os.ReadFile(e.Path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, [32]byte{}, fmt.Errorf("%s: plugin file %s does not exist", e.Name, e.Path)
		}
		return nil, [32]byte{}, fmt.Errorf("%s: read plugin file: %w", e.Name, err)
	}
	return code, sha256.Sum256(code), nil
}

// Info describes the loaded module or process.
func (p *Plugin) Info() wasm.Info { return p.info }

// PID is a process plugin's current process id (0 for Wasm or when not running).
func (p *Plugin) PID() int {
	if proc, ok := p.module.(*process); ok {
		return proc.PID()
	}
	return 0
}

// Close releases the plugin's instances.
func (p *Plugin) Close() { p.module.Close() }

// HasIntercept and HasResultHook report the module's entry points.
func (p *Plugin) HasIntercept() bool  { return p.info.Features&abi.FeatureIntercept != 0 }
func (p *Plugin) HasResultHook() bool { return p.info.Features&abi.FeatureResultHook != 0 }

// FailureMessage is the model-safe text of a call failed closed by this plugin.
func (p *Plugin) FailureMessage() string {
	return fmt.Sprintf("MCP interceptor '%s' failed, so the call was not completed", p.Entry.Name)
}

func (p *Plugin) encoder() *abi.Encoder {
	if e, ok := p.encs.Get().(*abi.Encoder); ok {
		e.Reset()
		return e
	}
	return &abi.Encoder{}
}

// Intercept runs the interceptor. A trap, timeout or malformed answer, or an
// answer with Error set, is an error: the caller fails the call closed.
func (p *Plugin) Intercept(ctx context.Context, userID string, req *abi.InterceptRequest) (resp abi.InterceptResponse, err error) {
	defer p.observed(time.Now(), &err)
	enc := p.encoder()
	defer p.encs.Put(enc)
	req.Config = p.Entry.Config
	req.Encode(enc)
	_, err = p.module.CallChecked(ctx, abi.ExportIntercept, userID, enc.Bytes(), func(out []byte) error {
		if err := resp.Decode(out); err != nil {
			return err
		}
		if resp.Action != abi.ActionContinue && resp.Action != abi.ActionDeny {
			return fmt.Errorf("unknown action %d", resp.Action)
		}
		return nil
	})
	if err != nil {
		p.log.Warn("plugin call failed", "error", err.Error())
		return resp, err
	}
	if resp.Error != "" {
		p.log.Warn("plugin reported an error")
		p.log.Debug("plugin error text", "error", truncate(resp.Error, 500))
		return resp, fmt.Errorf("%s: the plugin reported an error", p.Entry.Name)
	}
	return resp, nil
}

// OnResult runs the result hook; a nil Result in the answer keeps the result.
func (p *Plugin) OnResult(ctx context.Context, userID string, req *abi.ResultRequest) (resp abi.ResultResponse, err error) {
	defer p.observed(time.Now(), &err)
	enc := p.encoder()
	defer p.encs.Put(enc)
	req.Config = p.Entry.Config
	req.Encode(enc)
	_, err = p.module.CallChecked(ctx, abi.ExportOnResult, userID, enc.Bytes(), func(out []byte) error { return resp.Decode(out) })
	if err != nil {
		p.log.Warn("plugin result hook failed", "error", err.Error())
		return resp, err
	}
	if resp.Error != "" {
		p.log.Warn("plugin result hook reported an error")
		return resp, fmt.Errorf("%s: the plugin reported an error", p.Entry.Name)
	}
	return resp, nil
}

// observed reports a call that started at start and failed with *err.
func (p *Plugin) observed(start time.Time, err *error) {
	if p.observe == nil {
		return
	}
	p.observe(p.Entry.Name, RoleInterceptor, p.Entry.Kind, *err, time.Since(start))
}

// Plugin roles, as CallObserver names them.
const (
	RoleInterceptor = "interceptor"
	RoleDriver      = "driver"
)

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
