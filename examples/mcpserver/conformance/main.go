// Command conformance is the MCP server the official conformance suite
// (@modelcontextprotocol/conformance, pinned in testdata/npm) is run
// against. Every server scenario of the suite's active set, plus the pending
// json-schema-2020-12 scenario, names a tool, prompt or resource the server
// must offer and says how it must answer; this server implements exactly
// those, under exactly those names, so a gateway fronting it can be run
// through the suite and every failure is the gateway's.
//
// It is built on mcp-go, and written from the scenarios' requirements, not
// from the suite's reference server.
//
// Usage:
//
//	conformance [-transport stdio|http|sse] [-listen 127.0.0.1:0] [-name conformance]
//
// With -transport http (streamable HTTP, endpoint /mcp) or -transport sse
// (legacy HTTP+SSE, /sse and /message) it prints exactly one line to stdout
// once its listener is bound:
//
//	listening on http://127.0.0.1:41234
//
// Diagnostics go to stderr. With -transport stdio, stdout carries nothing but
// the protocol and the process exits when stdin is closed. Over HTTP,
// requests whose Host is not a loopback name are refused with 403 when the
// listener is on loopback (DNS rebinding protection).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"

	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/examples/internal/mcpserve"
)

// serverVersion is the version advertised in serverInfo.
const serverVersion = "0.1.0"

// config holds the parsed command line.
type config struct {
	transport string
	listen    string
	name      string
}

func main() { mcpserve.Main("conformance", parseFlags, run) }

// parseFlags parses and validates the command line. Usage and flag errors go
// to errOut so that stdout stays clean for the protocol.
func parseFlags(args []string, errOut io.Writer) (config, error) {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	fs.SetOutput(errOut)
	var cfg config
	fs.StringVar(&cfg.transport, "transport", mcpserve.Stdio, "transport: stdio, http (streamable HTTP at /mcp) or sse (HTTP+SSE at /sse and /message)")
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:0", "listen address for the http and sse transports")
	fs.StringVar(&cfg.name, "name", "conformance", "server name advertised to clients")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err := mcpserve.CheckTransport(cfg.transport); err != nil {
		return config{}, err
	}
	return cfg, nil
}

// run serves the conformance server on the configured transport until ctx is
// cancelled or, for stdio, stdin is closed.
func run(ctx context.Context, cfg config, stdin io.Reader, stdout io.Writer, logger *log.Logger) error {
	return mcpserve.Serve(ctx, newServer(cfg.name), mcpserve.Options{Transport: cfg.transport, Listen: cfg.listen,
		Stdin: stdin, Stdout: stdout, Logger: logger,
		// With an event store mcp-go stops a POST's notification forwarder
		// before it writes the result; without one, a notification sent just
		// before the result (the last progress or log message) can be
		// dropped. It also makes POST streams resumable with Last-Event-ID.
		StreamableHTTP: []server.StreamableHTTPOption{server.WithEventStore(server.NewInMemoryEventStore())}})
}

// newServer creates the MCP server with every conformance tool, prompt,
// resource and template registered, and the capabilities the scenarios
// probe: logging (logging/setLevel), completions (completion/complete),
// resource subscriptions and list-changed notifications.
func newServer(name string) *server.MCPServer {
	hooks := &server.Hooks{}
	// Answer every streamable HTTP request after initialize as an SSE
	// stream, as the TypeScript SDK does, rather than as JSON until the
	// first notification: clients and gateways then meet the framing most
	// servers use, and server-sse-multiple-streams checks the streams.
	hooks.AddOnRegisterSession(func(_ context.Context, s server.ClientSession) {
		if h, ok := s.(server.SessionWithStreamableHTTPConfig); ok {
			h.UpgradeToSSEWhenReceiveNotification()
		}
	})
	srv := server.NewMCPServer(name, serverVersion,
		server.WithHooks(hooks),
		server.WithToolCapabilities(false),
		server.WithPromptCapabilities(false),
		server.WithResourceCapabilities(true, false),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(promptCompletions{}),
		server.WithRecovery(),
	)
	srv.AddTools(tools(srv)...)
	srv.AddPrompts(prompts()...)
	srv.AddResources(resources()...)
	srv.AddResourceTemplates(resourceTemplates()...)
	return srv
}
