// Package mcpserve serves an example MCP server over stdio, streamable HTTP
// or HTTP+SSE, the way Antler's tests and quick start expect: for HTTP it
// binds the listener itself (so port 0 works) and announces
// "listening on http://<addr>" on stdout, then shuts down gracefully when the
// context ends.
package mcpserve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Transports.
const (
	Stdio = "stdio"
	HTTP  = "http"
	SSE   = "sse"
)

// CheckTransport reports an error unless t is one of the three transports.
func CheckTransport(t string) error {
	switch t {
	case Stdio, HTTP, SSE:
		return nil
	}
	return fmt.Errorf("unknown transport %q: want stdio, http or sse", t)
}

// ShutdownGrace bounds graceful HTTP shutdown. It stays below the five
// seconds test harnesses wait after SIGTERM before they kill.
const ShutdownGrace = 3 * time.Second

// Options say how to serve.
type Options struct {
	Transport string
	Listen    string // HTTP and SSE
	Stdin     io.Reader
	Stdout    io.Writer
	Logger    *log.Logger
	// HTTPContext adds request data (headers) to a call's context.
	HTTPContext func(context.Context, *http.Request) context.Context
	// StdioWorkers raises mcp-go's concurrent stdio call limit (0: default).
	StdioWorkers int
	// StreamableHTTP are extra options for the streamable HTTP transport,
	// applied after the endpoint, server and context options.
	StreamableHTTP []server.StreamableHTTPOption
	// WrapHTTP, when set, wraps the streamable HTTP handler (a server that
	// answers some methods itself, before mcp-go).
	WrapHTTP func(http.Handler) http.Handler
}

// Main is an example server's command line: parse the flags (help exits 0,
// a bad flag 2), then run until SIGINT or SIGTERM (a failure exits 1). Logs
// go to stderr so stdout stays the protocol's.
func Main[C any](name string, parse func(args []string, errOut io.Writer) (C, error),
	run func(ctx context.Context, cfg C, stdin io.Reader, stdout io.Writer, logger *log.Logger) error) {
	logger := log.New(os.Stderr, name+": ", log.LstdFlags)
	cfg, err := parse(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		logger.Print(err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, os.Stdin, os.Stdout, logger); err != nil {
		logger.Print(err)
		stop()
		os.Exit(1)
	}
}

// Serve serves srv until ctx ends or, for stdio, stdin is closed.
func Serve(ctx context.Context, srv *server.MCPServer, o Options) error {
	if o.Transport == Stdio {
		stdio := server.NewStdioServer(srv)
		if o.StdioWorkers > 0 {
			server.WithWorkerPoolSize(o.StdioWorkers)(stdio)
		}
		stdio.SetErrorLogger(o.Logger)
		if err := stdio.Listen(ctx, o.Stdin, o.Stdout); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("serve stdio: %w", err)
		}
		return nil
	}
	return serveHTTP(ctx, srv, o)
}

// serveHTTP serves srv over streamable HTTP or HTTP+SSE until ctx is
// cancelled, then shuts down gracefully.
func serveHTTP(ctx context.Context, srv *server.MCPServer, o Options) error {
	logger, stdout := o.Logger, o.Stdout
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	defer ln.Close()

	httpSrv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          logger,
	}
	var shutdown func(context.Context) error
	switch o.Transport {
	case HTTP:
		opts := []server.StreamableHTTPOption{server.WithEndpointPath("/mcp"), server.WithStreamableHTTPServer(httpSrv)}
		if o.HTTPContext != nil {
			opts = append(opts, server.WithHTTPContextFunc(o.HTTPContext))
		}
		opts = append(opts, o.StreamableHTTP...)
		h := server.NewStreamableHTTPServer(srv, opts...)
		var handler http.Handler = h
		if o.WrapHTTP != nil {
			handler = o.WrapHTTP(h)
		}
		mux := http.NewServeMux()
		mux.Handle("/mcp", handler)
		httpSrv.Handler = mux
		shutdown = h.Shutdown
	case SSE:
		opts := []server.SSEOption{server.WithSSEEndpoint("/sse"), server.WithMessageEndpoint("/message"), server.WithHTTPServer(httpSrv)}
		if o.HTTPContext != nil {
			opts = append(opts, server.WithSSEContextFunc(o.HTTPContext))
		}
		h := server.NewSSEServer(srv, opts...)
		httpSrv.Handler = h
		shutdown = h.Shutdown
	default:
		return fmt.Errorf("transport %q is not served over HTTP", o.Transport)
	}

	served := make(chan error, 1)
	go func() { served <- httpSrv.Serve(ln) }()

	// This line is the readiness signal test harnesses wait for; os.Stdout
	// is unbuffered, so it is on the wire once Fprintf returns.
	if _, err := fmt.Fprintf(stdout, "listening on http://%s\n", ln.Addr()); err != nil {
		return fmt.Errorf("announce address: %w", err)
	}
	logger.Printf("serving %s transport on %s", o.Transport, ln.Addr())

	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", o.Transport, err)
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownGrace)
	defer cancel()
	if err := shutdown(shutdownCtx); err != nil {
		_ = httpSrv.Close()
		return fmt.Errorf("shut down %s transport: %w", o.Transport, err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", o.Transport, err)
	}
	return nil
}
