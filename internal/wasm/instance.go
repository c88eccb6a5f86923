package wasm

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/antler-mcp/antler/abi"
)

// pool bounds the instances of one key: sem holds one token per instance in
// use or idle, so at most PoolSize exist and each serves one call at a time.
type pool struct {
	sem  chan struct{}
	mu   sync.Mutex
	idle []*instance
	// closed is set by closeIdle: an instance returned afterwards (by a
	// call that was in flight) is closed instead of kept.
	closed bool
}

// get takes an idle instance or makes one, waiting while PoolSize are busy.
func (p *pool) get(ctx context.Context, m *Module) (*instance, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, &CallError{Plugin: m.opts.Name, Kind: "busy", Err: ctx.Err()}
	}
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		inst := p.idle[n-1]
		// Clear the slot: a stale pointer in the backing array would keep
		// the instance's linear memory reachable after it is discarded.
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return inst, nil
	}
	p.mu.Unlock()
	inst, err := m.instantiate(ctx)
	if err != nil {
		<-p.sem
		return nil, &CallError{Plugin: m.opts.Name, Kind: "trap", Err: err}
	}
	return inst, nil
}

// put returns a healthy instance taken with get.
func (p *pool) put(inst *instance) {
	p.seed(inst)
	<-p.sem
}

// seed adds an idle instance made outside get (the one Load checked).
func (p *pool) seed(inst *instance) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		inst.close()
		return
	}
	p.idle = append(p.idle, inst)
	p.mu.Unlock()
}

// discard closes a failed instance and frees its slot.
func (p *pool) discard(inst *instance) {
	inst.close()
	<-p.sem
}

func (p *pool) idleOnly() bool { return len(p.sem) == 0 }

func (p *pool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.closed = true
	p.mu.Unlock()
	for _, inst := range idle {
		inst.close()
	}
}

// instance is one guest: its own linear memory, called by one goroutine at a time.
type instance struct {
	mod api.Module
	fns map[string]api.Function
	// in is the guest buffer the host writes requests into, reused while it
	// is large enough (antler_alloc's contract).
	inPtr, inCap uint32
}

func (i *instance) close() { _ = i.mod.Close(context.Background()) }

// callScalar calls a no-argument export returning one number.
func (i *instance) callScalar(ctx context.Context, timeout time.Duration, name string) (uint64, error) {
	f, ok := i.fns[name]
	if !ok {
		return 0, errors.New("missing export " + name)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := f.Call(cctx)
	if err != nil {
		return 0, err
	}
	if len(res) != 1 {
		return 0, errors.New(name + " returned no value")
	}
	return res[0], nil
}

// call writes in into the guest, runs export and copies the answer out.
func (i *instance) call(ctx context.Context, plugin string, timeout time.Duration, export string, in []byte, callTool CallToolFunc, log *slog.Logger) ([]byte, error) {
	fail := func(kind string, err error) ([]byte, error) {
		return nil, &CallError{Plugin: plugin, Kind: kind, Err: err}
	}
	f, ok := i.fns[export]
	if !ok {
		return fail("malformed", errors.New("missing export "+export))
	}
	if len(in) > abi.MaxMessageBytes {
		return fail("malformed", errors.New("request too large"))
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	state := &callState{callTool: callTool, log: log}
	cctx = context.WithValue(cctx, callStateKey{}, state)

	mem := i.mod.Memory()
	if uint32(len(in)) > i.inCap {
		res, err := i.fns[abi.ExportAlloc].Call(cctx, uint64(len(in)))
		if err != nil {
			return fail(kindOf(cctx, err), err)
		}
		ptr := uint32(res[0])
		if ptr == 0 {
			return fail("malformed", errors.New("antler_alloc returned null"))
		}
		i.inPtr, i.inCap = ptr, uint32(len(in))
	}
	if len(in) > 0 && !mem.Write(i.inPtr, in) {
		return fail("malformed", errors.New("antler_alloc returned a buffer outside memory"))
	}
	res, err := f.Call(cctx, uint64(i.inPtr), uint64(len(in)))
	if err != nil {
		return fail(kindOf(cctx, err), err)
	}
	ptr, n := abi.Unpack(res[0])
	if n == 0 {
		return []byte{}, nil
	}
	if n > abi.MaxMessageBytes {
		return fail("malformed", errors.New("answer too large"))
	}
	view, ok := mem.Read(ptr, n)
	if !ok {
		return fail("malformed", errors.New("answer outside memory"))
	}
	return append(make([]byte, 0, n), view...), nil
}

// kindOf classifies a failed guest call.
func kindOf(ctx context.Context, err error) string {
	if ctx.Err() != nil {
		return "timeout"
	}
	return "trap"
}

// callState is what host functions see of the call that invoked them.
type callState struct {
	callTool CallToolFunc
	log      *slog.Logger
	pending  []byte
}

type callStateKey struct{}

// maxLogBytes bounds one guest log line.
const maxLogBytes = 4096

// instantiateHost defines the antler_host_v1 import module in rt.
func instantiateHost(ctx context.Context, rt wazero.Runtime, log *slog.Logger) error {
	b := rt.NewHostModuleBuilder(abi.HostModule)
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		level, ptr, n := int32(stack[0]), uint32(stack[1]), uint32(stack[2])
		st, _ := ctx.Value(callStateKey{}).(*callState)
		if st == nil || n == 0 {
			return
		}
		n = min(n, maxLogBytes)
		msg, ok := mod.Memory().Read(ptr, n)
		if !ok {
			return
		}
		text := string(msg)
		if !utf8.ValidString(text) {
			text = "(invalid UTF-8)"
		}
		lvl := slog.LevelInfo
		switch level {
		case abi.LogDebug:
			lvl = slog.LevelDebug
		case abi.LogWarn:
			lvl = slog.LevelWarn
		case abi.LogError:
			lvl = slog.LevelError
		}
		st.log.Log(ctx, lvl, "plugin log", "message", text)
	}), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, nil).Export(abi.ImportLog)

	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		ptr, n := uint32(stack[0]), uint32(stack[1])
		stack[0] = ^uint64(0) // -1: refused
		st, _ := ctx.Value(callStateKey{}).(*callState)
		if st == nil || st.callTool == nil || n > abi.MaxMessageBytes {
			return
		}
		view, ok := mod.Memory().Read(ptr, n)
		if !ok {
			return
		}
		// Copy out of guest memory: decoded values alias their input, and
		// the guest may reuse that memory while the host still holds them.
		raw := append([]byte(nil), view...)
		var req abi.CallToolRequest
		if err := req.Decode(raw); err != nil {
			return
		}
		resp := st.callTool(ctx, &req)
		var enc abi.Encoder
		resp.Encode(&enc)
		st.pending = enc.Bytes()
		stack[0] = uint64(len(st.pending))
	}), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}).Export(abi.ImportCallTool)

	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		ptr, capacity := uint32(stack[0]), uint32(stack[1])
		stack[0] = 0
		st, _ := ctx.Value(callStateKey{}).(*callState)
		if st == nil {
			return
		}
		n := min(capacity, uint32(len(st.pending)))
		if n > 0 && mod.Memory().Write(ptr, st.pending[:n]) {
			stack[0] = uint64(n)
		}
		st.pending = nil
	}), []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}).Export(abi.ImportReadResult)

	_, err := b.Instantiate(ctx)
	return err
}
