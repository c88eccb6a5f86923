package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/jsonscan"
)

// Antler's own requests on a stdio connection (its raw tools/call and
// Request, ids "antler-N") skip mcp-go's stdio transport, which encodes
// each request through reflection and decodes each reply line twice into
// generic structs: the request line is written as bytes, and rawLines,
// which sits between the result cap's reader and mcp-go's, takes the
// replies to them off the child's stdout before mcp-go sees them.
// Everything else on the pipe (the handshake and mcp-go's own requests, the
// server's notifications and requests, a cut message's remains) passes
// through to mcp-go unchanged, so progress, log messages, the server's
// sampling, elicitation and roots requests, cancellation and the result cap
// behave as they do for mcp-go's requests.

// rawLines passes the child's stdout to mcp-go line by line, less the
// replies to requests registered with it.
type rawLines struct {
	r   io.Reader // the result cap's lineLimiter
	w   *lockedWriter
	buf []byte // read from r: the line returned last, then what follows it
	// used is the bytes of buf returned last; scanned those searched for a
	// newline.
	used, scanned int
	// pass is a line for mcp-go not yet returned in full; rerr the error
	// of r, returned once what came before it is passed.
	pass []byte
	rerr error

	mu      sync.Mutex
	waiters map[string]chan *transport.JSONRPCResponse // JSON of the id → its reply
	done    chan struct{}
	closed  bool
}

func newRawLines(r io.Reader, w *lockedWriter) *rawLines {
	return &rawLines{r: r, w: w, buf: make([]byte, 0, 32<<10), waiters: map[string]chan *transport.JSONRPCResponse{}, done: make(chan struct{})}
}

// Read is mcp-go's reader's.
func (l *rawLines) Read(p []byte) (int, error) {
	for len(l.pass) == 0 {
		if l.rerr != nil {
			l.close()
			return 0, l.rerr
		}
		if line := l.next(); line != nil && !l.take(line) {
			l.pass = line
		}
	}
	n := copy(p, l.pass)
	l.pass = l.pass[n:]
	return n, nil
}

// next is the next line, newline included (or the bytes before r's
// error), or nil at r's error. The line stays valid until the next call.
func (l *rawLines) next() []byte {
	l.buf = l.buf[:copy(l.buf, l.buf[l.used:])] // what was returned last time goes
	l.used, l.scanned = 0, 0
	for {
		if i := bytes.IndexByte(l.buf[l.scanned:], '\n'); i >= 0 {
			l.used = l.scanned + i + 1
			return l.buf[:l.used]
		}
		l.scanned = len(l.buf)
		if l.rerr != nil {
			l.used = len(l.buf)
			if l.used == 0 {
				return nil
			}
			return l.buf
		}
		if len(l.buf) == cap(l.buf) {
			l.buf = append(l.buf, 0)[:len(l.buf)] // (a line is bounded by the result cap)
		}
		k, err := l.r.Read(l.buf[len(l.buf):cap(l.buf)])
		l.buf = l.buf[:len(l.buf)+k]
		if err != nil {
			l.rerr = err
		}
	}
}

// take delivers line if it is the reply to a registered request.
func (l *rawLines) take(line []byte) bool {
	if !bytes.Contains(line, []byte(`"antler-`)) && !bytes.Contains(line, []byte(`\u`)) {
		return false // most lines: mcp-go's replies, notifications (an id may be spelled with escapes)
	}
	msg, ok := scanReply(bytes.TrimRight(line, "\r\n"))
	if !ok {
		return false
	}
	l.mu.Lock()
	ch := l.waiters[string(msg.id)]
	delete(l.waiters, string(msg.id))
	l.mu.Unlock()
	if ch == nil {
		return false // not (or no longer) awaited: mcp-go drops it
	}
	resp := &transport.JSONRPCResponse{JSONRPC: mcp.JSONRPC_VERSION}
	if msg.result != nil {
		resp.Result = append(json.RawMessage(nil), msg.result...)
	}
	if msg.err != nil {
		var e mcp.JSONRPCErrorDetails
		if json.Unmarshal(msg.err, &e) == nil {
			resp.Error = &e
		} else {
			resp.Error = &mcp.JSONRPCErrorDetails{Code: mcp.INTERNAL_ERROR, Message: "unreadable error from the server"}
		}
	}
	ch <- resp
	return true
}

// close fails every waiter: the stream ended or the connection closed.
func (l *rawLines) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
}

// send writes req and waits for its reply, as captureTransport.SendRequest
// does through mcp-go: under the result cap, with the call's relay
// registered, and failed when the connection ends.
//
// It makes no context: the reply is awaited on its own channel, which a
// result-cap failure wakes too, and a server request during the call finds
// it on the connection's list of relays (a stdio server's requests come on
// the connection's context, never the call's).
func (l *rawLines) send(ctx context.Context, rc *resultCap, rs *relays, id string, method string, params json.RawMessage) (*transport.JSONRPCResponse, error) {
	key := strconv.Quote(id)
	ch, err := l.await(key)
	if err != nil {
		return nil, err
	}
	call, err := rc.beginWoken(mcp.NewRequestId(id), func() { l.abort(key) })
	if err != nil {
		l.forget(key)
		return nil, err
	}
	defer rc.finish(call)
	if r := relayFrom(ctx); r != nil {
		var end func()
		var p any
		_, p, end = rs.enter(r, params)
		defer end()
		params, _ = p.(json.RawMessage) // (enter hands raw params back raw)
	}
	return l.exchange(ctx, call, ch, key, method, params)
}

// await registers a reply's waiter for the request with id key (as JSON).
func (l *rawLines) await(key string) (chan *transport.JSONRPCResponse, error) {
	ch := make(chan *transport.JSONRPCResponse, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, transport.ErrTransportClosed
	}
	l.waiters[key] = ch
	return ch, nil
}

// forget drops the waiter for key.
func (l *rawLines) forget(key string) {
	l.mu.Lock()
	delete(l.waiters, key)
	l.mu.Unlock()
}

// abort wakes the waiter for key with no reply: its call failed (the
// result cap), as take would with the reply. Each waiter is sent one value
// at most, by whichever of the two takes it out of the map first.
func (l *rawLines) abort(key string) {
	l.mu.Lock()
	ch := l.waiters[key]
	delete(l.waiters, key)
	l.mu.Unlock()
	if ch != nil {
		ch <- nil
	}
}

// exchange writes one request line and waits for its reply on ch (send's,
// apart so that send's defers are inlined).
func (l *rawLines) exchange(ctx context.Context, call *capCall, ch chan *transport.JSONRPCResponse, key string, method string, params json.RawMessage) (*transport.JSONRPCResponse, error) {
	if len(params) > 0 && (!jsonscan.Valid(params) || bytes.ContainsAny(params, "\r\n")) {
		var b bytes.Buffer
		if err := json.Compact(&b, params); err != nil {
			l.forget(key)
			return nil, fmt.Errorf("failed to marshal request: %w", err)
		}
		params = b.Bytes()
	}
	line := make([]byte, 0, 48+len(key)+len(method)+len(params))
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, key...)
	line = append(line, `,"method":`...)
	line = strconv.AppendQuote(line, method)
	if len(params) > 0 {
		line = append(append(line, `,"params":`...), params...)
	}
	line = append(line, "}\n"...)

	if _, err := l.w.Write(line); err != nil {
		l.forget(key)
		return nil, fmt.Errorf("failed to write request: %w", err)
	}
	select {
	case resp := <-ch:
		if cerr := call.err(); cerr != nil {
			return nil, cerr
		}
		if resp == nil {
			return nil, transport.ErrTransportClosed // (abort records its error first)
		}
		return resp, nil
	case <-ctx.Done():
		l.forget(key)
		if cerr := call.err(); cerr != nil {
			return nil, cerr
		}
		return nil, ctx.Err()
	case <-l.done:
		l.forget(key)
		select {
		case resp := <-ch: // delivered just before the end
			if cerr := call.err(); cerr != nil {
				return nil, cerr
			}
			if resp == nil {
				return nil, transport.ErrTransportClosed
			}
			return resp, nil
		default:
		}
		if cerr := call.err(); cerr != nil {
			return nil, cerr
		}
		return nil, transport.ErrTransportClosed
	}
}

// reply is the top-level members of a JSON-RPC response that rawLines
// reads, each a slice of the line or nil.
type reply struct {
	id, result, err json.RawMessage
}

// scanReply reads a response line whose id is a string: without decoding
// it when it is one valid JSON object whose keys are all exactly jsonrpc,
// id, result or error, unescaped; decoded otherwise, as mcp-go would (its
// field names match keys in any case). A message with a method (a request
// or notification of the server's) is not a reply.
func scanReply(line []byte) (reply, bool) {
	var m reply
	if !jsonscan.Valid(line) {
		return m, false
	}
	ok := jsonscan.Members(line, func(key, value []byte) bool {
		switch string(key) {
		case "jsonrpc":
		case "id":
			m.id = value
		case "result":
			m.result = value
		case "error":
			m.err = value
		default:
			return false
		}
		return true
	})
	if !ok {
		var d struct {
			ID     json.RawMessage `json:"id"`
			Method json.RawMessage `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(line, &d) != nil || d.Method != nil {
			return m, false
		}
		m = reply{id: d.ID, result: d.Result, err: d.Error}
	}
	if len(m.id) < 2 || m.id[0] != '"' {
		return m, false
	}
	if bytes.IndexByte(m.id, '\\') >= 0 { // spelled with escapes: as the request wrote it
		var s string
		if json.Unmarshal(m.id, &s) != nil {
			return m, false
		}
		m.id = strconv.AppendQuote(nil, s)
	}
	if isNull(m.result) {
		m.result = nil
	}
	if isNull(m.err) {
		m.err = nil
	}
	return m, true
}

func isNull(v json.RawMessage) bool { return v == nil || string(v) == "null" }
