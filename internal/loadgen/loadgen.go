// Package loadgen drives one tool call over and over from N concurrent
// workers and reports throughput and latency percentiles. It is the load
// generator behind BENCHMARKS.md's gateway comparisons: the same call made
// through an MCP streamable HTTP endpoint (Antler's /mcp or a peer gateway),
// through Antler's REST door, or straight to a stdio server with mcp-go's
// client, so the figures differ only by what sits between caller and server.
//
// Each worker owns its connection state: an MCP session of its own
// (initialize, notifications/initialized, then calls carrying
// Mcp-Session-Id), or its own stdio child process in Direct mode. Setup runs
// before the clock starts; only tool calls are timed.
package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Mode selects the door a call goes through.
type Mode string

// The modes Run supports.
const (
	// MCP posts JSON-RPC tools/call requests to a streamable HTTP endpoint,
	// one session per worker (none when the server is stateless).
	MCP Mode = "mcp"
	// REST posts {"arguments": …} to Antler's /api/mcp/tools/{name}/call.
	REST Mode = "rest"
	// Direct calls a stdio server with mcp-go's client, one child process
	// per worker.
	Direct Mode = "direct"
)

// DefaultProtocolVersion is the MCP revision workers announce when Options
// leaves it empty: the newest revision that keeps sessions, which every
// gateway measured here serves.
const DefaultProtocolVersion = "2025-11-25"

// DefaultCallTimeout bounds one call (or one setup step) when Options leaves
// CallTimeout zero, so a hung server ends the run instead of stalling it.
const DefaultCallTimeout = 30 * time.Second

// ErrOptions is returned, wrapped, for options Run cannot use.
var ErrOptions = errors.New("loadgen: invalid options")

// ErrSetup is returned, wrapped, when a worker cannot open its session or
// start its client. A run with fewer workers than asked would measure a
// different concurrency, so Run stops instead of counting it.
var ErrSetup = errors.New("loadgen: worker setup failed")

// Options describes one run.
type Options struct {
	Mode Mode
	// URL is the MCP endpoint (MCP mode, e.g. http://127.0.0.1:8080/mcp) or
	// Antler's base URL (REST mode, e.g. http://127.0.0.1:8080).
	URL string
	// Command, Args and Env start the stdio server in Direct mode (Env as
	// "KEY=value" entries added to this process's environment).
	Command string
	Args    []string
	Env     []string
	// Tool is the tool's name as the door names it (Antler's REST door and
	// /mcp prefix it with the server name, e.g. demo_echo).
	Tool string
	// Arguments is the tool's input, a JSON object (nil: {}).
	Arguments json.RawMessage
	// Workers is the number of concurrent callers (at least 1).
	Workers int
	// Count is the total number of calls across all workers; when zero the
	// run lasts Duration instead.
	Count    int
	Duration time.Duration
	// Header holds extra headers sent on every HTTP request of the mcp and
	// rest modes (for example X-Antler-Thread-Id, so that every worker's
	// calls share one thread and its stdio process).
	Header http.Header
	// Authorization is sent verbatim as the Authorization header on every
	// HTTP request when set, e.g. "Bearer <key>".
	Authorization string
	// ProtocolVersion is the MCP revision to announce (empty:
	// DefaultProtocolVersion).
	ProtocolVersion string
	// CallTimeout bounds each call and each setup step (zero:
	// DefaultCallTimeout).
	CallTimeout time.Duration
	// Watch lists process ids whose CPU time and peak memory, each with all
	// its descendants, are reported for the timed window: the gateway under
	// test, say. In Direct mode this process's own children (the stdio
	// servers) are added. Linux only; elsewhere the figures stay zero.
	Watch []int
}

// Result is what one run measured.
type Result struct {
	Mode    Mode
	Workers int
	// Calls counts every call made in the timed window, failed or not;
	// Errors counts those that failed (transport error, non-200 status,
	// JSON-RPC error, or a tool result with isError).
	Calls  int
	Errors int
	// FirstError is one failure's description, for the report (nil when
	// Errors is zero).
	FirstError error
	Elapsed    time.Duration
	// Throughput is Calls per second of Elapsed.
	Throughput float64
	// Latency percentiles over every call, failed ones included.
	P50, P90, P99, Max time.Duration
	// CPU is the CPU time (user + system) the watched process trees spent
	// during the timed window; PeakRSS is the sum of their processes'
	// high-water resident sizes at the end (bytes). Zero when nothing was
	// watched or the platform cannot tell.
	CPU     time.Duration
	PeakRSS int64
	// OwnCPU is the part of CPU the processes in Watch spent themselves,
	// without their descendants: a gateway's own work, apart from the
	// stdio servers it started (in Direct mode the stdio servers this
	// process starts are never part of it).
	OwnCPU time.Duration
}

// CPUPer1000 is the watched processes' CPU time per 1,000 calls.
func (r Result) CPUPer1000() time.Duration {
	if r.Calls == 0 {
		return 0
	}
	return time.Duration(float64(r.CPU) * 1000 / float64(r.Calls))
}

// OwnCPUPer1000 is the watched processes' own CPU time (OwnCPU) per 1,000
// calls.
func (r Result) OwnCPUPer1000() time.Duration {
	if r.Calls == 0 {
		return 0
	}
	return time.Duration(float64(r.OwnCPU) * 1000 / float64(r.Calls))
}

// caller makes one worker's calls. Its methods are used by one goroutine.
type caller interface {
	// call makes call number seq (1-based within the worker) and reports
	// whether it failed.
	call(ctx context.Context, seq int) error
	close() error
}

// Run performs one run: it sets up every worker, then calls the tool until
// Count calls are made or Duration has passed, and reports. ctx ends the run
// early (the result covers the calls made so far).
func Run(ctx context.Context, opts Options) (Result, error) {
	if err := opts.check(); err != nil {
		return Result{}, err
	}
	if opts.ProtocolVersion == "" {
		opts.ProtocolVersion = DefaultProtocolVersion
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if len(opts.Arguments) == 0 {
		opts.Arguments = json.RawMessage("{}")
	}

	var hc *http.Client
	if opts.Mode != Direct {
		tr := &http.Transport{MaxIdleConns: opts.Workers * 2, MaxIdleConnsPerHost: opts.Workers * 2, IdleConnTimeout: time.Minute}
		defer tr.CloseIdleConnections()
		hc = &http.Client{Transport: tr}
	}

	callers, err := setup(ctx, opts, hc)
	defer func() {
		for _, c := range callers {
			if c != nil {
				_ = c.close()
			}
		}
	}()
	if err != nil {
		return Result{}, err
	}

	watch := opts.Watch
	if opts.Mode == Direct {
		watch = append(slices.Clone(watch), childrenOf(selfPID())...)
	}
	cpuBefore := treeCPU(watch)

	var (
		issued   atomic.Int64
		mu       sync.Mutex
		lats     []time.Duration
		failures int
		first    error
		wg       sync.WaitGroup
	)
	deadline := time.Now().Add(opts.Duration)
	start := time.Now()
	for _, c := range callers {
		wg.Go(func() {
			local := make([]time.Duration, 0, 1024)
			var bad int
			var firstLocal error
			for seq := 1; ctx.Err() == nil; seq++ {
				if opts.Count > 0 {
					if issued.Add(1) > int64(opts.Count) {
						break
					}
				} else if !time.Now().Before(deadline) {
					break
				}
				cctx, cancel := context.WithTimeout(ctx, opts.CallTimeout)
				t0 := time.Now()
				err := c.call(cctx, seq)
				local = append(local, time.Since(t0))
				cancel()
				if err != nil {
					bad++
					if firstLocal == nil {
						firstLocal = err
					}
				}
			}
			mu.Lock()
			lats = append(lats, local...)
			failures += bad
			if first == nil {
				first = firstLocal
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpuAfter := treeCPU(watch)
	cpu := cpuAfter.since(cpuBefore)
	own := cpuAfter.of(opts.Watch).since(cpuBefore.of(opts.Watch))

	res := Result{
		Mode:       opts.Mode,
		Workers:    opts.Workers,
		Calls:      len(lats),
		Errors:     failures,
		FirstError: first,
		Elapsed:    elapsed,
		CPU:        cpu,
		OwnCPU:     own,
		PeakRSS:    treePeakRSS(watch),
	}
	if elapsed > 0 {
		res.Throughput = float64(res.Calls) / elapsed.Seconds()
	}
	slices.Sort(lats)
	res.P50, res.P90, res.P99 = percentile(lats, 50), percentile(lats, 90), percentile(lats, 99)
	if len(lats) > 0 {
		res.Max = lats[len(lats)-1]
	}
	return res, nil
}

// check refuses options Run cannot use.
func (o Options) check() error {
	switch o.Mode {
	case MCP, REST:
		if o.URL == "" {
			return fmt.Errorf("%w: %s mode needs a URL", ErrOptions, o.Mode)
		}
	case Direct:
		if o.Command == "" {
			return fmt.Errorf("%w: direct mode needs a command", ErrOptions)
		}
	default:
		return fmt.Errorf("%w: unknown mode %q (want mcp, rest or direct)", ErrOptions, o.Mode)
	}
	if o.Tool == "" {
		return fmt.Errorf("%w: no tool named", ErrOptions)
	}
	if o.Workers < 1 {
		return fmt.Errorf("%w: workers must be at least 1", ErrOptions)
	}
	if o.Count < 0 || (o.Count == 0 && o.Duration <= 0) {
		return fmt.Errorf("%w: give a positive count or duration", ErrOptions)
	}
	if len(o.Arguments) > 0 && !json.Valid(o.Arguments) {
		return fmt.Errorf("%w: arguments are not valid JSON", ErrOptions)
	}
	return nil
}

// setup opens every worker's session concurrently. It returns the callers it
// made even on error, so the caller can close them.
func setup(ctx context.Context, opts Options, hc *http.Client) ([]caller, error) {
	callers := make([]caller, opts.Workers)
	errs := make([]error, opts.Workers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, opts.CallTimeout)
			defer cancel()
			callers[i], errs[i] = newCaller(sctx, opts, hc)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return callers, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return callers, nil
}

// newCaller opens one worker's connection state; on error it returns a nil
// interface (never a typed nil), so cleanup can skip it.
func newCaller(ctx context.Context, opts Options, hc *http.Client) (caller, error) {
	switch opts.Mode {
	case MCP:
		s, err := newSession(ctx, opts, hc)
		if err != nil {
			return nil, err
		}
		return s, nil
	case REST:
		return newRESTCaller(opts, hc), nil
	default:
		d, err := newDirect(ctx, opts)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
}

// cpuSample is the CPU time each process of a watched tree had spent at
// one moment.
type cpuSample map[int]time.Duration

// since is the CPU time spent between before and s by the processes alive
// at s (a process that started in between counts whole). A process that
// exited in between takes its time with it, so the sum is a lower bound
// then, never negative.
func (s cpuSample) since(before cpuSample) time.Duration {
	var sum time.Duration
	for p, cpu := range s {
		if d := cpu - before[p]; d > 0 {
			sum += d
		}
	}
	return sum
}

// of is the part of s that samples pids.
func (s cpuSample) of(pids []int) cpuSample {
	out := cpuSample{}
	for _, p := range pids {
		if cpu, ok := s[p]; ok {
			out[p] = cpu
		}
	}
	return out
}

// percentile is the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 · n)
	return sorted[max(rank, 1)-1]
}
