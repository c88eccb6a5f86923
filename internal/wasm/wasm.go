// Package wasm runs Antler plugins as sandboxed WebAssembly modules with
// wazero: each module is compiled once per content (cached on disk), served
// by a bounded pool of instances (one call per instance at a time), and every
// call has a deadline and a memory cap. A guest gets no filesystem, network,
// environment, real clock or randomness unless its configuration grants them.
// A trap, timeout, out-of-memory or malformed answer discards the instance and
// fails that call; the host keeps serving.
package wasm

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/antler-mcp/antler/abi"
)

// Defaults for a module's limits.
const (
	DefaultTimeout     = time.Second
	DefaultMaxMemoryMB = 64
	DefaultPoolSize    = 4
	// initTimeout bounds instantiation, including the guest's own _initialize.
	initTimeout = 10 * time.Second
	// maxUserPools bounds the per-user pools of an isolate:per_user module.
	maxUserPools = 256
)

// Runtime owns the wazero runtimes (one per memory limit, since the limit is
// runtime-wide) and the shared compilation cache.
type Runtime struct {
	cache wazero.CompilationCache
	log   *slog.Logger

	mu       sync.Mutex
	runtimes map[uint32]wazero.Runtime
	compiled map[compiledKey]wazero.CompiledModule
	closed   bool
}

type compiledKey struct {
	pages uint32
	sum   [32]byte
}

// RuntimeOptions configure a Runtime.
type RuntimeOptions struct {
	// CacheDir holds compiled code across restarts ("" keeps it in memory).
	CacheDir string
	Logger   *slog.Logger
}

// NewRuntime returns a runtime; modules are compiled lazily by Load.
func NewRuntime(opts RuntimeOptions) (*Runtime, error) {
	r := &Runtime{log: opts.Logger, runtimes: map[uint32]wazero.Runtime{}, compiled: map[compiledKey]wazero.CompiledModule{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if opts.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("wasm compilation cache %s: %w", opts.CacheDir, err)
		}
		r.cache = c
	} else {
		r.cache = wazero.NewCompilationCache()
	}
	return r, nil
}

// Close closes every runtime and module.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	var errs []error
	for _, rt := range r.runtimes {
		errs = append(errs, rt.Close(ctx))
	}
	r.runtimes = map[uint32]wazero.Runtime{}
	r.compiled = map[compiledKey]wazero.CompiledModule{}
	errs = append(errs, r.cache.Close(ctx))
	return errors.Join(errs...)
}

// runtimeFor returns the runtime for a memory limit, creating it with WASI
// and the host module.
func (r *Runtime) runtimeFor(ctx context.Context, pages uint32) (wazero.Runtime, error) {
	if rt, ok := r.runtimes[pages]; ok {
		return rt, nil
	}
	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(r.cache).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(pages)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("instantiate WASI: %w", err)
	}
	if err := instantiateHost(ctx, rt, r.log); err != nil {
		rt.Close(ctx)
		return nil, err
	}
	r.runtimes[pages] = rt
	return rt, nil
}

// Grants are the host capabilities a module may use. Filesystem and network
// access are never granted.
type Grants struct {
	Clock  bool // real wall clock, monotonic clock and sleep
	Random bool // a cryptographic random source
}

// CallToolFunc serves the call_tool import (task drivers).
type CallToolFunc func(ctx context.Context, req *abi.CallToolRequest) abi.CallToolResponse

// ModuleOptions configure one loaded module.
type ModuleOptions struct {
	Name        string // for logs and errors
	Timeout     time.Duration
	MaxMemoryMB int
	PoolSize    int
	// PerUser keys the instance pool by user (isolate: per_user), for
	// plugins that keep state; otherwise instances serve any user.
	PerUser  bool
	Grants   Grants
	CallTool CallToolFunc
}

// Info describes a loaded module.
type Info struct {
	Major, Minor uint16
	Features     uint64
	Exports      []string
	Imports      []string
	Size         int
	SHA256       string
}

// LoadError is a module that cannot be used; it names the module.
type LoadError struct {
	Name   string
	Reason string
	Err    error
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("plugin %s: %s", e.Name, e.Reason)
}

func (e *LoadError) Unwrap() error { return e.Err }

// Load compiles code (once per content and memory limit), checks its ABI
// version and exports, and returns a module ready to call.
func (r *Runtime) Load(ctx context.Context, code []byte, opts ModuleOptions) (*Module, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxMemoryMB <= 0 {
		opts.MaxMemoryMB = DefaultMaxMemoryMB
	}
	if opts.PoolSize <= 0 {
		opts.PoolSize = DefaultPoolSize
	}
	fail := func(reason string, err error) (*Module, error) {
		return nil, &LoadError{Name: opts.Name, Reason: reason, Err: err}
	}
	pages := uint32(opts.MaxMemoryMB) * 16 // 64 KiB pages
	sum := sha256.Sum256(code)

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return fail("the wasm runtime is closed", nil)
	}
	rt, err := r.runtimeFor(ctx, pages)
	if err != nil {
		r.mu.Unlock()
		return fail("cannot start a runtime", err)
	}
	key := compiledKey{pages: pages, sum: sum}
	compiled, ok := r.compiled[key]
	if !ok {
		bounded, err := BoundTables(code, uint64(opts.MaxMemoryMB)<<20)
		if err != nil {
			r.mu.Unlock()
			return fail(err.Error(), err)
		}
		compiled, err = rt.CompileModule(ctx, bounded)
		if err != nil {
			r.mu.Unlock()
			return fail("not a valid WebAssembly module: "+err.Error(), err)
		}
		r.compiled[key] = compiled
	}
	r.mu.Unlock()

	info := Info{Size: len(code), SHA256: fmt.Sprintf("%x", sum)}
	exports := compiled.ExportedFunctions()
	for name := range exports {
		info.Exports = append(info.Exports, name)
	}
	sort.Strings(info.Exports)
	for _, f := range compiled.ImportedFunctions() {
		mod, name, _ := f.Import()
		info.Imports = append(info.Imports, mod+"."+name)
	}
	sort.Strings(info.Imports)
	for _, need := range []string{abi.ExportVersion, abi.ExportFeatures, abi.ExportAlloc} {
		if _, ok := exports[need]; !ok {
			return fail(fmt.Sprintf("missing export %s (is it built with the Antler SDK, -buildmode=c-shared?)", need), nil)
		}
	}
	for _, imp := range info.Imports {
		if mod, _, _ := cut(imp, '.'); mod != abi.HostModule && mod != wasi_snapshot_preview1.ModuleName {
			return fail(fmt.Sprintf("imports %s, which the host does not provide (only %s and WASI)", imp, abi.HostModule), nil)
		}
	}

	m := &Module{rt: rt, compiled: compiled, opts: opts, log: r.log.With("plugin", opts.Name), pools: map[string]*pool{}}
	_, m.hasInit = exports[abi.ExportInitialize]
	inst, err := m.instantiate(ctx)
	if err != nil {
		return fail("cannot instantiate", err)
	}
	v, err := inst.callScalar(ctx, m.opts.Timeout, abi.ExportVersion)
	if err != nil {
		inst.close()
		return fail("antler_abi_version failed", err)
	}
	info.Major, info.Minor = abi.UnpackVersion(int32(v))
	if info.Major != abi.Major {
		inst.close()
		return fail(fmt.Sprintf("speaks plugin ABI %d.%d; this host speaks %d.x", info.Major, info.Minor, abi.Major), nil)
	}
	f, err := inst.callScalar(ctx, m.opts.Timeout, abi.ExportFeatures)
	if err != nil {
		inst.close()
		return fail("antler_features failed", err)
	}
	info.Features = f & abi.KnownFeatures
	for feature, name := range map[uint64]string{abi.FeatureIntercept: abi.ExportIntercept, abi.FeatureResultHook: abi.ExportOnResult,
		abi.FeatureTaskDriver: abi.ExportTaskSubmit, abi.FeatureTaskAnswer: abi.ExportTaskAnswer} {
		if info.Features&feature != 0 {
			if _, ok := exports[name]; !ok {
				inst.close()
				return fail("declares a feature but lacks the export "+name, nil)
			}
		}
	}
	m.info = info
	m.pool("").seed(inst)
	return m, nil
}

func cut(s string, sep byte) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// Module is a loaded plugin module.
type Module struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	opts     ModuleOptions
	info     Info
	log      *slog.Logger
	hasInit  bool

	mu     sync.Mutex
	pools  map[string]*pool
	closed bool
}

// Info describes the module.
func (m *Module) Info() Info { return m.info }

// Options returns the module's effective options.
func (m *Module) Options() ModuleOptions { return m.opts }

// CallError is a failed call into a module. Kind says how it failed; the
// message names the plugin and never carries guest output.
type CallError struct {
	Plugin string
	Kind   string // "timeout", "trap", "malformed", "closed", "busy"
	Err    error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("plugin %s failed (%s)", e.Plugin, e.Kind)
}

func (e *CallError) Unwrap() error { return e.Err }

// Call runs one entry point with an encoded message and returns the encoded
// answer (a copy). key selects the instance pool: the user id for a per_user
// module, ignored otherwise. A failed instance is discarded, never reused.
func (m *Module) Call(ctx context.Context, export, key string, in []byte) ([]byte, error) {
	return m.CallChecked(ctx, export, key, in, nil)
}

// CallChecked is Call with a check of the answer (typically: it decodes)
// run before the instance goes back to its pool. An answer that fails the
// check is a malformed answer: the instance is discarded like one that
// trapped, and the error is a *CallError of Kind "malformed".
func (m *Module) CallChecked(ctx context.Context, export, key string, in []byte, check func([]byte) error) ([]byte, error) {
	if !m.opts.PerUser {
		key = ""
	}
	p := m.pool(key)
	if p == nil {
		return nil, &CallError{Plugin: m.opts.Name, Kind: "closed"}
	}
	inst, err := p.get(ctx, m)
	if err != nil {
		return nil, err
	}
	out, err := inst.call(ctx, m.opts.Name, m.opts.Timeout, export, in, m.opts.CallTool, m.log)
	if err == nil && check != nil {
		if cerr := check(out); cerr != nil {
			err = &CallError{Plugin: m.opts.Name, Kind: "malformed", Err: cerr}
		}
	}
	if err != nil {
		p.discard(inst)
		return nil, err
	}
	p.put(inst)
	return out, nil
}

// Close closes every instance.
func (m *Module) Close() {
	m.mu.Lock()
	m.closed = true
	pools := m.pools
	m.pools = map[string]*pool{}
	m.mu.Unlock()
	for _, p := range pools {
		p.closeIdle()
	}
}

func (m *Module) pool(key string) *pool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	p, ok := m.pools[key]
	if !ok {
		if len(m.pools) >= maxUserPools {
			for k, q := range m.pools {
				if k != "" && q.idleOnly() {
					delete(m.pools, k)
					q.closeIdle()
					break
				}
			}
		}
		p = &pool{sem: make(chan struct{}, m.opts.PoolSize)}
		m.pools[key] = p
	}
	return p
}

// instantiate makes one instance: a fresh linear memory and the guest's own
// initialisation, with only the granted capabilities.
func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	cfg := wazero.NewModuleConfig().WithName("").WithStartFunctions()
	if m.hasInit {
		cfg = cfg.WithStartFunctions(abi.ExportInitialize)
	}
	if m.opts.Grants.Clock {
		cfg = cfg.WithSysWalltime().WithSysNanotime().WithSysNanosleep()
	}
	if m.opts.Grants.Random {
		cfg = cfg.WithRandSource(crand.Reader)
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), initTimeout)
	defer cancel()
	mod, err := m.rt.InstantiateModule(ictx, m.compiled, cfg)
	if err != nil {
		return nil, err
	}
	inst := &instance{mod: mod, fns: map[string]api.Function{}}
	for _, name := range []string{abi.ExportVersion, abi.ExportFeatures, abi.ExportAlloc, abi.ExportIntercept,
		abi.ExportOnResult, abi.ExportTaskSubmit, abi.ExportTaskStatus, abi.ExportTaskCancel, abi.ExportTaskAnswer} {
		if f := mod.ExportedFunction(name); f != nil {
			inst.fns[name] = f
		}
	}
	return inst, nil
}
