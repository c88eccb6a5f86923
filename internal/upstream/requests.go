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

// maxServerRequests bounds the server→client requests (roots/list, ping,
// sampling, elicitation) a connection handles at once: past it, the
// server's stdout (stdio) or the event streams of its answers (streamable
// HTTP) are not read until one is answered.
const maxServerRequests = 32

// replyWriteTimeout is how long the reply to a server request may take to
// be written: on stdio the session is then ended (the child has stopped
// reading its stdin); over HTTP the reply's POST is given up.
const replyWriteTimeout = 5 * time.Second

// requestGate bounds a server's requests to the host. mcp-go starts a
// goroutine per request that sends its reply (over HTTP, a POST of its
// own), and a server that floods requests without taking the replies (a
// child that does not read its stdin, an HTTP server that holds the reply
// POSTs open) had every one of them held, the host growing with whatever
// the server sent. The gate sends the replies itself (send), and the reader
// of the server's messages waits while maxServerRequests are unanswered,
// so the server is held back by its own unread output instead. A request
// relayed to a downstream client (relay.go) holds its place until the
// client answers or RelayTimeout passes; the reply's timeout starts only
// once the answer is there, since it is about sending the reply.
//
// A request is counted from the moment the reader hands it to mcp-go
// (reserve), not from when mcp-go's goroutine for it starts: a reader
// that raced ahead of those goroutines let a stream of small requests
// through by the hundred. The handlers claim the reservations in the order
// they were made (mcp-go starts them in the order it read them); one mcp-go
// never takes up (a message it could not read) lapses after
// unclaimedAfter.
type requestGate struct {
	send func(ctx context.Context, reply []byte) error

	mu       sync.Mutex
	cond     *sync.Cond
	pending  int     // handlers running, and requests reserved for one
	reserved []int64 // when each unclaimed request was handed over, oldest first
	closed   bool
}

// unclaimedAfter is how long a request handed to mcp-go keeps its place
// before its handler starts: ordinarily microseconds.
const unclaimedAfter = time.Second

func newRequestGate(send func(ctx context.Context, reply []byte) error) *requestGate {
	g := &requestGate{send: send}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// reserve counts a request handed to mcp-go until a handler claims it.
func (g *requestGate) reserve() {
	g.mu.Lock()
	g.pending++
	g.reserved = append(g.reserved, time.Now().UnixNano())
	g.mu.Unlock()
}

// claim moves the oldest reservation's place to a handler, or takes one
// when there is none (the request came another way, or its reservation
// lapsed).
func (g *requestGate) claim() {
	g.mu.Lock()
	if len(g.reserved) > 0 {
		g.reserved = g.reserved[1:]
	} else {
		g.pending++
	}
	g.mu.Unlock()
}

// dropUnclaimedLocked frees the places of requests handed over before
// cutoff and never claimed, reporting whether any are left to lapse.
func (g *requestGate) dropUnclaimedLocked(cutoff int64) (left bool) {
	n := 0
	for n < len(g.reserved) && g.reserved[n] < cutoff {
		n++
	}
	g.pending -= n
	g.reserved = g.reserved[n:]
	return len(g.reserved) > 0
}

// stdioReplies writes each reply as a line on w; one stuck for
// replyWriteTimeout calls abort.
func stdioReplies(w *lockedWriter, abort func()) func(context.Context, []byte) error {
	return func(_ context.Context, reply []byte) error {
		stuck := time.AfterFunc(replyWriteTimeout, abort)
		_, err := w.Write(append(reply, '\n'))
		stuck.Stop()
		return err
	}
}

// wait holds the reader back while the gate is full.
func (g *requestGate) wait() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.pending >= maxServerRequests && !g.closed {
		if g.dropUnclaimedLocked(time.Now().Add(-unclaimedAfter).UnixNano()) && g.pending >= maxServerRequests {
			// Woken to drop them if nothing else wakes it first.
			t := time.AfterFunc(unclaimedAfter, func() {
				g.mu.Lock()
				g.cond.Broadcast()
				g.mu.Unlock()
			})
			g.cond.Wait()
			t.Stop()
			continue
		}
		if g.pending >= maxServerRequests {
			g.cond.Wait()
		}
	}
}

// done frees a handler's place.
func (g *requestGate) done() {
	g.mu.Lock()
	g.pending--
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

// wrap answers each request with h and sends the reply itself, so mcp-go
// sends none.
func (g *requestGate) wrap(h transport.RequestHandler) transport.RequestHandler {
	return func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		g.claim()
		defer g.done()
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
		_ = g.send(ctx, b)
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
