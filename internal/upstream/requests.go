package upstream

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// maxServerRequests bounds the server→client requests (roots/list, ping)
// a stdio connection handles at once: past it, the child's stdout is not
// read until one is answered.
const maxServerRequests = 32

// replyWriteTimeout is how long the reply to a server request may wait to
// be written before the session is ended: the child has stopped reading its
// stdin.
const replyWriteTimeout = 5 * time.Second

// requestGate bounds a stdio child's requests to the host. mcp-go starts a
// goroutine per request that writes its reply, and a child that floods
// requests without reading its stdin had every one of them blocked on the
// full pipe. The gate writes the replies itself (a reply write stuck for
// replyWriteTimeout ends the session), and the stdout reader waits while
// maxServerRequests are unanswered, so the child is held back by its own
// full stdout instead of the host growing. A request relayed to a
// downstream client (relay.go) holds its place until the client answers or
// RelayTimeout passes; the stuck-reply timer starts only once the answer is
// there, since it is about writing the reply.
type requestGate struct {
	w     *lockedWriter
	abort func() // ends the session

	mu      sync.Mutex
	cond    *sync.Cond
	pending int
	closed  bool
}

func newRequestGate(w *lockedWriter, abort func()) *requestGate {
	g := &requestGate{w: w, abort: abort}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// wait holds the reader back while the gate is full.
func (g *requestGate) wait() {
	g.mu.Lock()
	for g.pending >= maxServerRequests && !g.closed {
		g.cond.Wait()
	}
	g.mu.Unlock()
}

func (g *requestGate) add(n int) {
	g.mu.Lock()
	g.pending += n
	g.cond.Broadcast()
	g.mu.Unlock()
}

// close opens the gate for good: the session is ending.
func (g *requestGate) close() {
	g.mu.Lock()
	g.closed = true
	g.cond.Broadcast()
	g.mu.Unlock()
}

// wrap answers each request with h and writes the reply itself, so mcp-go
// writes none.
func (g *requestGate) wrap(h transport.RequestHandler) transport.RequestHandler {
	return func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		g.add(1)
		defer g.add(-1)
		resp, err := h(ctx, req)
		if err != nil {
			resp = transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil)
		}
		if resp == nil {
			return nil, nil
		}
		b, err := json.Marshal(resp)
		if err != nil {
			return nil, nil
		}
		stuck := time.AfterFunc(replyWriteTimeout, g.abort)
		_, _ = g.w.Write(append(b, '\n'))
		stuck.Stop()
		return nil, nil
	}
}

// lockedWriter serialises the writes to a child's stdin: mcp-go's (under
// its own lock) and the gate's replies.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does not wait for a stuck write: it is what unblocks one.
func (l *lockedWriter) Close() error { return l.w.Close() }
