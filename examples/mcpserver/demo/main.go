// Command demo is a small but complete MCP server built on mcp-go. It backs
// the README quick start and the integration tests, so its tools are chosen to
// exercise the interesting corners of a client: structured output, tool
// errors, cancellation, raw JSON Schemas, crashes and request metadata.
//
// Usage:
//
//	demo [-transport stdio|http|sse] [-listen 127.0.0.1:0] [-name demo]
//	     [-init-delay 0s] [-tools a,b,c] [-blob]
//
// With -transport http (streamable HTTP, endpoint /mcp) or -transport sse
// (legacy HTTP+SSE, endpoints /sse and /message) the server prints exactly one
// line to stdout once its listener is bound:
//
//	listening on http://127.0.0.1:41234
//
// All diagnostics go to stderr. With -transport stdio, stdout carries nothing
// but the protocol and the process exits when stdin is closed.
//
// For measuring the server itself, ANTLER_DEMO_CPUPROFILE=<file> writes a
// CPU profile of the run when it stops, and ANTLER_DEMO_WIRELOG=<file>
// appends the first protocol lines each way to file (see diag.go).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/antler-mcp/antler/examples/internal/mcpserve"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// serverVersion is the version advertised in serverInfo.
const serverVersion = "0.1.0"

// Transport names accepted by -transport.
const (
	transportStdio = mcpserve.Stdio
	transportHTTP  = mcpserve.HTTP
	transportSSE   = mcpserve.SSE
)

// schemaProbeInputSchema is served verbatim as the input schema of the
// schema_probe tool, so clients can check they pass schemas through intact.
const schemaProbeInputSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","description":"probe of schema fidelity","properties":{"kind":{"type":"string","enum":["a","b"]},"n":{"type":"integer","minimum":1}},"oneOf":[{"required":["kind"]},{"required":["n"]}],"minProperties":1,"additionalProperties":false}`

// addOutputSchema is the output schema of the add tool.
const addOutputSchema = `{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`

// config holds the parsed command line.
type config struct {
	transport  string
	listen     string
	name       string
	initDelay  time.Duration
	extraTools []string
	blob       bool
	// echoNote is appended to the echo tool's description: a server that
	// rewrites a tool, for the tool catalog's tests.
	echoNote string
}

func main() { mcpserve.Main("demo", parseFlags, run) }

// parseFlags parses and validates the command line. Usage and flag errors are
// written to errOut so that stdout stays clean for the protocol.
func parseFlags(args []string, errOut io.Writer) (config, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(errOut)

	var cfg config
	var tools string
	fs.StringVar(&cfg.transport, "transport", transportStdio, "transport: stdio, http (streamable HTTP at /mcp) or sse (HTTP+SSE at /sse and /message)")
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:0", "listen address for the http and sse transports")
	fs.StringVar(&cfg.name, "name", "demo", "server name advertised to clients")
	fs.DurationVar(&cfg.initDelay, "init-delay", 0, "delay before answering initialize or server/discover")
	fs.BoolVar(&cfg.blob, "blob", false, "also offer the blob tool, which returns a text result of any size (for result-size limits)")
	fs.StringVar(&cfg.echoNote, "echo-note", "", "text appended to the echo tool's description (a rewritten tool, for tool-catalog tests)")
	fs.StringVar(&tools, "tools", "", "comma-separated names of extra trivial tools that answer \"<name> ok\"")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}

	switch cfg.transport {
	case transportStdio, transportHTTP, transportSSE:
	default:
		return config{}, fmt.Errorf("unknown transport %q: want stdio, http or sse", cfg.transport)
	}
	if cfg.initDelay < 0 {
		return config{}, fmt.Errorf("negative -init-delay %s", cfg.initDelay)
	}

	builtin := builtinToolNames()
	for name := range strings.SplitSeq(tools, ",") {
		name = strings.TrimSpace(name)
		if name == "" || slices.Contains(cfg.extraTools, name) {
			continue
		}
		// Silently replacing a built-in tool would make tests lie about
		// what they exercise, so refuse it.
		if slices.Contains(builtin, name) {
			return config{}, fmt.Errorf("-tools: %q is already a built-in tool", name)
		}
		cfg.extraTools = append(cfg.extraTools, name)
	}
	return cfg, nil
}

// run builds the MCP server and serves it on the configured transport until
// ctx is cancelled or, for stdio, stdin is closed.
func run(ctx context.Context, cfg config, stdin io.Reader, stdout io.Writer, logger *log.Logger) error {
	stdin, stdout, stop, err := startDiagnostics(stdin, stdout)
	if err != nil {
		return err
	}
	defer stop()
	srv := newServer(cfg)
	return mcpserve.Serve(ctx, srv, mcpserve.Options{Transport: cfg.transport, Listen: cfg.listen,
		Stdin: stdin, Stdout: stdout, Logger: logger, HTTPContext: withRequestHeaders})
}

// newServer creates the MCP server with every demo tool registered.
func newServer(cfg config) *server.MCPServer {
	hooks := &server.Hooks{}
	if cfg.initDelay > 0 {
		// Hooks run synchronously on the request's goroutine before the
		// handler, so sleeping here delays the answer without blocking other
		// requests. Legacy clients open with initialize, 2026-07-28 clients
		// with server/discover; both are delayed.
		hooks.AddBeforeInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest) {
			pause(ctx, cfg.initDelay)
		})
		hooks.AddBeforeDiscover(func(ctx context.Context, _ any, _ *mcp.DiscoverRequest) {
			pause(ctx, cfg.initDelay)
		})
	}

	srv := server.NewMCPServer(cfg.name, serverVersion,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
		server.WithHooks(hooks),
	)
	builtin := builtinTools()
	if cfg.echoNote != "" {
		builtin[0].Tool.Description += " " + cfg.echoNote // builtin[0] is echo
	}
	srv.AddTools(builtin...)
	if cfg.blob {
		srv.AddTool(
			mcp.NewTool("blob",
				sideEffectFree(),
				mcp.WithDescription("Returns a text result of exactly bytes bytes (lines of x)."),
				mcp.WithInteger("bytes", mcp.Required(), mcp.Min(0), mcp.Description("Size of the text.")),
			),
			handleBlob,
		)
	}
	for _, name := range cfg.extraTools {
		srv.AddTool(
			mcp.NewTool(name,
				sideEffectFree(),
				mcp.WithDescription("Trivial tool added with -tools; answers \""+name+" ok\"."),
			),
			func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(name + " ok"), nil
			},
		)
	}
	return srv
}

// pause sleeps for d or until ctx is done, whichever comes first.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// builtinToolNames lists the names of the tools every demo server offers.
func builtinToolNames() []string {
	tools := builtinTools()
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Tool.Name
	}
	return names
}

// builtinTools returns the tools every demo server offers.
func builtinTools() []server.ServerTool {
	return []server.ServerTool{
		{
			Tool: mcp.NewTool("echo",
				sideEffectFree(),
				mcp.WithDescription("Echoes the message back as \"Echo: <message>\"."),
				mcp.WithString("message", mcp.Required(), mcp.Description("Text to echo.")),
			),
			Handler: handleEcho,
		},
		{
			Tool: mcp.NewTool("add",
				sideEffectFree(),
				mcp.WithDescription("Adds two numbers and returns the sum as text and structured content."),
				mcp.WithNumber("a", mcp.Required(), mcp.Description("First addend.")),
				mcp.WithNumber("b", mcp.Required(), mcp.Description("Second addend.")),
				mcp.WithRawOutputSchema(json.RawMessage(addOutputSchema)),
			),
			Handler: handleAdd,
		},
		{
			Tool: mcp.NewTool("whoami",
				sideEffectFree(),
				mcp.WithDescription("Reports the server process identity, selected environment variables, the HTTP headers and the _meta of this call."),
			),
			Handler: handleWhoami,
		},
		{
			Tool: mcp.NewTool("sleep",
				sideEffectFree(),
				mcp.WithDescription("Sleeps for ms milliseconds; returns early with an error when the call is cancelled."),
				mcp.WithInteger("ms", mcp.Required(), mcp.Min(0), mcp.Description("Milliseconds to sleep.")),
			),
			Handler: handleSleep,
		},
		{
			Tool: mcp.NewTool("fail",
				sideEffectFree(),
				mcp.WithDescription("Returns a tool result with isError set and the given message."),
				mcp.WithString("message", mcp.Required(), mcp.Description("Error text to return.")),
			),
			Handler: handleFail,
		},
		{
			// NewTool would pre-fill a structured input schema, which mcp-go
			// refuses to marshal alongside a raw one, hence the raw-schema
			// constructor.
			Tool: mcp.NewToolWithRawSchema("schema_probe",
				"Accepts input matching a deliberately intricate JSON Schema; used to check schema fidelity.",
				json.RawMessage(schemaProbeInputSchema),
			),
			Handler: handleSchemaProbe,
		},
		{
			Tool: mcp.NewTool("exit",
				mcp.WithDescription("Terminates the server process immediately with the given exit code, without answering."),
				mcp.WithInteger("code", mcp.Required(), mcp.Description("Process exit code.")),
			),
			Handler: handleExit,
		},
		{
			Tool: mcp.NewTool("write_file",
				mcp.WithDescription("Writes content to path, relative to the server's working directory, creating parent directories; returns the absolute path written."),
				mcp.WithString("path", mcp.Required(), mcp.Description("File path, relative to the server's working directory or absolute.")),
				mcp.WithString("content", mcp.Required(), mcp.Description("Text to write.")),
				mcp.WithString("reply", mcp.Description("Test knob: answer with this text instead of the absolute path.")),
				mcp.WithBoolean("rpc_error", mcp.Description("Test knob: write nothing and answer with a JSON-RPC error naming the absolute path.")),
				mcp.WithString("group", mcp.Description("Test knob: wait until parties calls of this group have arrived before writing, and until all of them have written before answering.")),
				mcp.WithInteger("parties", mcp.Min(1), mcp.Description("How many calls the group waits for (default 2).")),
			),
			Handler: handleWriteFile,
		},
	}
}

// sideEffectFree annotates a tool as read-only, idempotent and closed-world.
// mcp-go's defaults describe every tool as destructive, which is wrong for
// most of the demo tools and would make clients ask for needless approval.
func sideEffectFree() mcp.ToolOption {
	return mcp.WithToolAnnotation(mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(true),
		DestructiveHint: mcp.ToBoolPtr(false),
		IdempotentHint:  mcp.ToBoolPtr(true),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	})
}

// handleEcho implements the echo tool.
func handleEcho(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	msg, err := req.RequireString("message")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText("Echo: " + msg), nil
}

// handleAdd implements the add tool.
func handleAdd(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := req.RequireFloat("a")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	b, err := req.RequireFloat("b")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	sum := a + b
	text := fmt.Sprintf("The sum of %s and %s is %s.", formatNumber(a), formatNumber(b), formatNumber(sum))
	return mcp.NewToolResultStructured(map[string]any{"sum": sum}, text), nil
}

// formatNumber renders f in its shortest exact decimal form, so 5 prints as
// "5" rather than "5.000000".
func formatNumber(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// identity is the result of the whoami tool.
type identity struct {
	PID     int               `json:"pid"`
	PPID    int               `json:"ppid"`
	CWD     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	Headers map[string]string `json:"headers"`
	Meta    *mcp.Meta         `json:"meta"`
}

// handleWhoami implements the whoami tool.
func handleWhoami(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("whoami: working directory: %w", err)
	}
	headers := headersFromContext(ctx)
	if headers == nil {
		headers = map[string]string{}
	}
	id := identity{
		PID:     os.Getpid(),
		PPID:    os.Getppid(),
		CWD:     cwd,
		Env:     demoEnv(os.Environ()),
		Headers: headers,
		Meta:    req.Params.Meta,
	}
	res, err := mcp.NewToolResultJSON(id)
	if err != nil {
		return nil, fmt.Errorf("whoami: %w", err)
	}
	return res, nil
}

// demoEnv selects the environment variables whoami reports: those prefixed
// ANTLER_DEMO_, the temp-dir variables and ANTLER_THREAD_WORKSPACE, which tests use to check how a
// host shapes a server's environment.
func demoEnv(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(name, "ANTLER_DEMO_"), name == "TMPDIR", name == "TMP", name == "TEMP", name == "ANTLER_THREAD_WORKSPACE":
			env[name] = value
		}
	}
	return env
}

// headersKey is the context key under which HTTP transports store the
// flattened headers of the request carrying the current message.
type headersKey struct{}

// withRequestHeaders records r's headers in ctx for whoami. It is installed
// as the context func of both HTTP transports. Names are lower-cased and
// repeated values joined with ", ". Go moves the Host header to r.Host, so it
// is put back here.
func withRequestHeaders(ctx context.Context, r *http.Request) context.Context {
	headers := make(map[string]string, len(r.Header)+1)
	for name, values := range r.Header {
		headers[strings.ToLower(name)] = strings.Join(values, ", ")
	}
	if r.Host != "" {
		headers["host"] = r.Host
	}
	return context.WithValue(ctx, headersKey{}, headers)
}

// headersFromContext returns the headers stored by withRequestHeaders, or nil
// when the message did not arrive over HTTP.
func headersFromContext(ctx context.Context) map[string]string {
	headers, _ := ctx.Value(headersKey{}).(map[string]string)
	return headers
}

// handleSleep implements the sleep tool.
func handleSleep(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ms, err := req.RequireInt("ms")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if ms < 0 {
		return mcp.NewToolResultError(fmt.Sprintf("ms must not be negative, got %d", ms)), nil
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return mcp.NewToolResultText(fmt.Sprintf("slept %dms", ms)), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("sleep of %dms interrupted: %w", ms, ctx.Err())
	}
}

// maxBlob bounds the blob tool's result (1 GiB).
const maxBlob = 1 << 30

// handleBlob implements the blob tool: 63 x and a newline, repeated, cut to
// the size asked for, so the JSON carries escapes as real text does.
func handleBlob(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n, err := req.RequireInt("bytes")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if n < 0 || n > maxBlob {
		return mcp.NewToolResultError(fmt.Sprintf("bytes must be from 0 to %d, got %d", maxBlob, n)), nil
	}
	line := strings.Repeat("x", 63) + "\n"
	text := strings.Repeat(line, n/len(line)+1)[:n]
	return mcp.NewToolResultText(text), nil
}

// handleFail implements the fail tool.
func handleFail(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultError(req.GetString("message", "failed")), nil
}

// handleSchemaProbe implements the schema_probe tool.
func handleSchemaProbe(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText("probe ok"), nil
}

// handleExit implements the exit tool: it simulates a crash by ending the
// process before any response is written.
func handleExit(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	code, err := req.RequireInt("code")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	os.Exit(code)
	return nil, nil // unreachable
}

// handleWriteFile implements the write_file tool.
func handleWriteFile(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	path, err := req.RequireString("path")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	content, err := req.RequireString("content")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("resolve %q: %v", path, err)), nil
	}
	if req.GetBool("rpc_error", false) {
		return nil, fmt.Errorf("refusing to write %s", abs)
	}
	var g *group
	if name := req.GetString("group", ""); name != "" {
		g = joinGroup(name, req.GetInt("parties", 2))
		if err := g.arrived.wait(ctx); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("create parent of %s: %v", abs, err)), nil
	}
	if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("write %s: %v", abs, err)), nil
	}
	if g != nil {
		if err := g.wrote.wait(ctx); err != nil {
			return nil, err
		}
	}
	return mcp.NewToolResultText(req.GetString("reply", abs)), nil
}

// group is a rendezvous of write_file calls: a test makes calls overlap
// for certain by having each wait for the others, twice.
type group struct {
	arrived, wrote *barrier
}

// barrier opens once n parties have passed it.
type barrier struct {
	mu   sync.Mutex
	n    int
	open chan struct{}
}

func (b *barrier) pass() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n--; b.n == 0 {
		close(b.open)
	}
}

var groups = struct {
	sync.Mutex
	m map[string]*group
}{m: map[string]*group{}}

// joinGroup returns the group name, made for parties calls on first use;
// the last party to arrive removes it, so the name can be used again.
func joinGroup(name string, parties int) *group {
	groups.Lock()
	defer groups.Unlock()
	g := groups.m[name]
	if g == nil {
		g = &group{
			arrived: &barrier{n: parties, open: make(chan struct{})},
			wrote:   &barrier{n: parties, open: make(chan struct{})},
		}
		groups.m[name] = g
	}
	if g.arrived.n == 1 {
		delete(groups.m, name)
	}
	return g
}

// wait passes b and blocks until every party has, or ctx ends.
func (b *barrier) wait(ctx context.Context) error {
	b.pass()
	select {
	case <-b.open:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("write_file group interrupted: %w", ctx.Err())
	}
}
