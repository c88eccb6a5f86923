package plugins

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/wasm"
)

// Extism carrier (kind "extism"): a module written with an Extism PDK in
// Rust, JS, Zig, … runs through github.com/extism/go-sdk. It exports the
// ABI's entry points in Extism's calling style: antler_info, antler_intercept,
// antler_on_result, antler_task_* are `() -> i32` functions whose input is the
// encoded request and whose output (output_set) is the encoded answer;
// antler_info answers an abi.Info message. Vars and HTTP are disabled: the
// contract forbids state between calls and grants no network.

const extismPoolSize = 4

// ExportInfo is the Extism-style export that answers an encoded abi.Info.
const ExportInfo = "antler_info"

type extismBackend struct {
	compiled *extism.CompiledPlugin
	entry    Entry
	cfg      wazero.ModuleConfig
	sem      chan struct{}
	mu       sync.Mutex
	idle     []*extism.Plugin
	closed   bool
}

var _ backend = (*extismBackend)(nil)

func (h *Host) loadExtism(ctx context.Context, e Entry, code []byte, log *slog.Logger) (*extismBackend, abi.Info, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = wasm.DefaultTimeout
	}
	memMB := e.MaxMemoryMB
	if memMB <= 0 {
		memMB = wasm.DefaultMaxMemoryMB
	}
	code, err := wasm.BoundTables(code, uint64(memMB)<<20)
	if err != nil {
		return nil, abi.Info{}, fmt.Errorf("%s: %w", e.Name, err)
	}
	manifest := extism.Manifest{
		Wasm:    []extism.Wasm{extism.WasmData{Data: code, Name: "main"}},
		Memory:  &extism.ManifestMemory{MaxPages: uint32(memMB) * 16, MaxVarBytes: 0, MaxHttpResponseBytes: 0},
		Timeout: uint64(timeout / time.Millisecond),
	}
	compiled, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{EnableWasi: true}, nil)
	if err != nil {
		return nil, abi.Info{}, fmt.Errorf("%s: not a loadable Extism module: %w", e.Name, err)
	}
	cfg := wazero.NewModuleConfig()
	if e.Grants.Clock {
		cfg = cfg.WithSysWalltime().WithSysNanotime().WithSysNanosleep()
	}
	if e.Grants.Random {
		cfg = cfg.WithRandSource(crand.Reader)
	}
	b := &extismBackend{compiled: compiled, entry: e, cfg: cfg, sem: make(chan struct{}, extismPoolSize)}
	out, err := b.CallChecked(ctx, ExportInfo, "", nil, nil)
	if err != nil {
		b.Close()
		return nil, abi.Info{}, fmt.Errorf("%s: %s failed (does the module export it?): %w", e.Name, ExportInfo, err)
	}
	var info abi.Info
	if err := info.Decode(out); err != nil {
		b.Close()
		return nil, abi.Info{}, fmt.Errorf("%s: malformed %s answer", e.Name, ExportInfo)
	}
	if info.Major != abi.Major {
		b.Close()
		return nil, abi.Info{}, fmt.Errorf("%s: speaks plugin ABI %d.%d; this host speaks %d.x", e.Name, info.Major, info.Minor, abi.Major)
	}
	_ = log
	return b, info, nil
}

// CallChecked runs one Extism export on a pooled instance; an instance
// that fails, or whose answer fails check, is discarded.
func (b *extismBackend) CallChecked(ctx context.Context, export, _ string, in []byte, check func([]byte) error) ([]byte, error) {
	select {
	case b.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-b.sem }()
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errors.New("plugin closed")
	}
	var inst *extism.Plugin
	if n := len(b.idle); n > 0 {
		inst = b.idle[n-1]
		// Clear the slot: a stale pointer in the backing array would keep
		// the instance's memories reachable after it is discarded.
		b.idle[n-1] = nil
		b.idle = b.idle[:n-1]
	}
	b.mu.Unlock()
	if inst == nil {
		var err error
		if inst, err = b.compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: b.cfg}); err != nil {
			return nil, &wasm.CallError{Plugin: b.entry.Name, Kind: "trap", Err: err}
		}
	}
	status, out, err := inst.CallWithContext(ctx, export, in)
	if err != nil || status != 0 {
		_ = inst.Close(context.Background())
		kind := "trap"
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) { // the caller's deadline or the manifest's
			kind = "timeout"
		}
		if err == nil {
			err = fmt.Errorf("exit status %d", status)
		}
		return nil, &wasm.CallError{Plugin: b.entry.Name, Kind: kind, Err: err}
	}
	if len(out) > abi.MaxMessageBytes {
		_ = inst.Close(context.Background())
		return nil, &wasm.CallError{Plugin: b.entry.Name, Kind: "malformed", Err: errors.New("answer too large")}
	}
	out = append([]byte(nil), out...)
	if check != nil {
		if cerr := check(out); cerr != nil {
			_ = inst.Close(context.Background())
			return nil, &wasm.CallError{Plugin: b.entry.Name, Kind: "malformed", Err: cerr}
		}
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = inst.Close(context.Background())
	} else {
		b.idle = append(b.idle, inst)
		b.mu.Unlock()
	}
	return out, nil
}

// Close releases every instance and the compiled module.
func (b *extismBackend) Close() {
	b.mu.Lock()
	b.closed = true
	idle := b.idle
	b.idle = nil
	b.mu.Unlock()
	for _, inst := range idle {
		_ = inst.Close(context.Background())
	}
	_ = b.compiled.Close(context.Background())
}
