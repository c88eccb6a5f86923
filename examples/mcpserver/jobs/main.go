// Command jobs is a small MCP server whose job API does not match the
// ordinary task contract that task_toolsets drive: the tools have their own
// names, a job id is a number, a state is a number, and the result is not in
// the status answer but fetched by a second tool. Antler runs it as durable
// tasks through a plugin task driver (examples/plugins/jobsdriver).
//
//	enqueue      {payload, steps?, state_delay_ms?, ask?}  → {job: 7}
//	job_state    {job}              → {job, state, progress, steps, reason?, prompt?}
//	job_output   {job}              → {job, output}       (state 2 only; else isError)
//	abort_job    {job}              → {job, state}
//	supply_input {job, token, verdict, value?} → {job, state} or {job, state, refused}
//	job_stats    {}                 → {enqueued, state_calls, output_calls, abort_calls,
//	                                 input_calls, inputs_applied,
//	                                 max_concurrent_state, state_calls_per_job}
//
// States: 0 queued, 1 running, 2 done, 3 failed, 4 aborted, 5 waiting for
// input. A job advances one step per job_state call (no clocks, so tests
// are deterministic): queued on the first, running until steps calls, then
// done; a payload of "fail" ends failed with a reason. steps defaults to 2.
// A job enqueued with ask stops at its first step in state 5 with ask as
// its prompt, until supply_input answers it: verdict 1 supplies value
// (the output ends " with <value>"), 2 declines (" without input"), 3
// aborts the job. token is the answer's idempotency key: the same token
// again is a no-op answered with the job's state; another answer to a job
// not waiting is refused. state_delay_ms makes each
// job_state call of the job take that long, so job_stats can tell whether
// two callers ever polled one job at once (max_concurrent_state).
//
// Usage: jobs [-transport stdio|http|sse] [-listen 127.0.0.1:0]
//
// Over HTTP it prints "listening on http://…" once its listener is bound.
// Jobs live as long as the process.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/examples/internal/mcpserve"
)

// Job states, as numbers on the wire.
const (
	stateQueued  = 0
	stateRunning = 1
	stateDone    = 2
	stateFailed  = 3
	stateAborted = 4
	stateWaiting = 5
)

// supply_input's verdicts.
const (
	verdictSupply  = 1
	verdictDecline = 2
	verdictAbort   = 3
)

const (
	maxSteps        = 1000
	maxStateDelayMS = 10_000
)

type config struct{ transport, listen string }

func main() { mcpserve.Main("jobs", parseFlags, run) }

func parseFlags(args []string, errOut io.Writer) (config, error) {
	flags := flag.NewFlagSet("jobs", flag.ContinueOnError)
	flags.SetOutput(errOut)
	var cfg config
	flags.StringVar(&cfg.transport, "transport", mcpserve.Stdio, "transport: stdio, http (streamable HTTP at /mcp) or sse")
	flags.StringVar(&cfg.listen, "listen", "127.0.0.1:0", "listen address for the http and sse transports")
	if err := flags.Parse(args); err != nil {
		return config{}, err
	}
	if err := mcpserve.CheckTransport(cfg.transport); err != nil {
		return config{}, err
	}
	return cfg, nil
}

func run(ctx context.Context, cfg config, stdin io.Reader, stdout io.Writer, logger *log.Logger) error {
	return mcpserve.Serve(ctx, newServer(), mcpserve.Options{Transport: cfg.transport, Listen: cfg.listen,
		Stdin: stdin, Stdout: stdout, Logger: logger})
}

// job is one queued job.
type job struct {
	payload    string
	steps      int
	progress   int
	state      int
	delay      time.Duration
	inState    int // job_state calls in flight
	maxInState int
	stateCalls int
	ask        string // the prompt, until answered
	token      string // the answer taken
	reply      string // what the output ends with
}

// board holds the jobs and the call counters.
type board struct {
	mu                                 sync.Mutex
	jobs                               map[int]*job
	next                               int
	stateCalls, outputCalls, abortCall int
	inputCalls, inputsApplied          int
}

func newServer() *server.MCPServer {
	srv := server.NewMCPServer("jobs", "0.1.0", server.WithToolCapabilities(false), server.WithRecovery())
	b := &board{jobs: map[int]*job{}}
	jobArg := mcp.WithNumber("job", mcp.Required(), mcp.Description("The job number enqueue answered."))
	srv.AddTools(
		server.ServerTool{Tool: mcp.NewTool("enqueue", mcp.WithDescription("Queue a job; answers its number."),
			mcp.WithString("payload", mcp.Required(), mcp.Description(`What to process; "fail" makes the job fail.`)),
			mcp.WithNumber("steps", mcp.Description("How many job_state calls the job takes (default 2).")),
			mcp.WithString("ask", mcp.Description("A question the job asks at its first step (state 5) until supply_input answers it."))), Handler: b.enqueue},
		server.ServerTool{Tool: mcp.NewTool("job_state", mcp.WithDescription("A job's numeric state: 0 queued, 1 running, 2 done, 3 failed, 4 aborted."), jobArg), Handler: b.state},
		server.ServerTool{Tool: mcp.NewTool("job_output", mcp.WithDescription("A done job's output."), jobArg), Handler: b.output},
		server.ServerTool{Tool: mcp.NewTool("abort_job", mcp.WithDescription("Abort a job that has not ended."), jobArg), Handler: b.abort},
		server.ServerTool{Tool: mcp.NewTool("supply_input", mcp.WithDescription("Answer a job waiting for input (state 5)."), jobArg,
			mcp.WithString("token", mcp.Required(), mcp.Description("The answer's idempotency key.")),
			mcp.WithNumber("verdict", mcp.Required(), mcp.Description("1 supply value, 2 decline, 3 abort the job.")),
			mcp.WithString("value", mcp.Description("The input, with verdict 1."))), Handler: b.supply},
		server.ServerTool{Tool: mcp.NewTool("job_stats", mcp.WithDescription("Call counters.")), Handler: b.stats},
	)
	return srv
}

func structured(v map[string]any) *mcp.CallToolResult {
	return mcp.NewToolResultStructured(v, fmt.Sprint(v))
}

func (b *board) enqueue(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	payload, err := req.RequireString("payload")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	steps := req.GetInt("steps", 2)
	if steps < 1 || steps > maxSteps {
		return mcp.NewToolResultError(fmt.Sprintf("steps must be between 1 and %d", maxSteps)), nil
	}
	delay := req.GetInt("state_delay_ms", 0)
	if delay < 0 || delay > maxStateDelayMS {
		return mcp.NewToolResultError(fmt.Sprintf("state_delay_ms must be between 0 and %d", maxStateDelayMS)), nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	b.jobs[b.next] = &job{payload: payload, steps: steps, delay: time.Duration(delay) * time.Millisecond, ask: req.GetString("ask", "")}
	return structured(map[string]any{"job": b.next}), nil
}

// find returns the job the request names; the caller holds b.mu.
func (b *board) find(req mcp.CallToolRequest) (int, *job, *mcp.CallToolResult) {
	n := req.GetInt("job", 0)
	j, ok := b.jobs[n]
	if !ok {
		return n, nil, mcp.NewToolResultError(fmt.Sprintf("no job %d", n))
	}
	return n, j, nil
}

func (b *board) state(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stateCalls++
	n, j, bad := b.find(req)
	if bad != nil {
		return bad, nil
	}
	j.stateCalls++
	if j.delay > 0 {
		j.inState++
		j.maxInState = max(j.maxInState, j.inState)
		b.mu.Unlock()
		select {
		case <-time.After(j.delay):
		case <-ctx.Done():
		}
		b.mu.Lock()
		j.inState--
	}
	if j.state == stateQueued || j.state == stateRunning {
		j.progress++
		switch {
		case j.ask != "":
			j.state = stateWaiting
		case j.progress >= j.steps && j.payload == "fail":
			j.state = stateFailed
		case j.progress >= j.steps:
			j.state = stateDone
		default:
			j.state = stateRunning
		}
	}
	out := map[string]any{"job": n, "state": j.state, "progress": j.progress, "steps": j.steps}
	switch j.state {
	case stateFailed:
		out["reason"] = "the payload asked to fail"
	case stateWaiting:
		out["prompt"] = j.ask
	}
	return structured(out), nil
}

func (b *board) supply(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inputCalls++
	n, j, bad := b.find(req)
	if bad != nil {
		return bad, nil
	}
	token, err := req.RequireString("token")
	if err != nil || token == "" {
		return mcp.NewToolResultError("token is required"), nil
	}
	out := map[string]any{"job": n}
	switch {
	case token == j.token: // a repeat of the answer taken: no further effect
	case j.state != stateWaiting:
		out["refused"] = fmt.Sprintf("job %d is not waiting for input", n)
	default:
		switch req.GetInt("verdict", 0) {
		case verdictSupply:
			j.reply = " with " + req.GetString("value", "")
			j.state = stateRunning
		case verdictDecline:
			j.reply = " without input"
			j.state = stateRunning
		case verdictAbort:
			j.state = stateAborted
		default:
			return mcp.NewToolResultError("verdict must be 1, 2 or 3"), nil
		}
		j.ask, j.token = "", token
		b.inputsApplied++
	}
	out["state"] = j.state
	return structured(out), nil
}

func (b *board) output(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.outputCalls++
	n, j, bad := b.find(req)
	if bad != nil {
		return bad, nil
	}
	if j.state != stateDone {
		return mcp.NewToolResultError(fmt.Sprintf("job %d is not done", n)), nil
	}
	return structured(map[string]any{"job": n, "output": "processed: " + strings.ToUpper(j.payload) + j.reply}), nil
}

func (b *board) abort(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.abortCall++
	n, j, bad := b.find(req)
	if bad != nil {
		return bad, nil
	}
	if j.state == stateQueued || j.state == stateRunning || j.state == stateWaiting {
		j.state = stateAborted
	}
	return structured(map[string]any{"job": n, "state": j.state}), nil
}

func (b *board) stats(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	maxIn, perJob := 0, map[string]int{}
	for n, j := range b.jobs {
		maxIn = max(maxIn, j.maxInState)
		perJob[fmt.Sprint(n)] = j.stateCalls
	}
	return structured(map[string]any{"enqueued": b.next, "state_calls": b.stateCalls, "output_calls": b.outputCalls,
		"abort_calls": b.abortCall, "input_calls": b.inputCalls, "inputs_applied": b.inputsApplied, "max_concurrent_state": maxIn, "state_calls_per_job": perJob}), nil
}
