package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// DefaultMaxResultBytes bounds one message from a server (the JSON-RPC
// response carrying a tool result) when neither the server's
// max_result_bytes nor the host's setting says otherwise.
const DefaultMaxResultBytes int64 = 16 << 20

// ResultTooLargeError is a response that exceeded the connection's
// max_result_bytes. It was discarded while it was read, never held whole.
// Ended means the connection had to be cut to stop it (the message's id could
// not be recovered); it then also counts as ErrConnectionClosed.
type ResultTooLargeError struct {
	Limit int64
	Ended bool
}

func (e *ResultTooLargeError) Error() string {
	msg := fmt.Sprintf("upstream message larger than max_result_bytes (%d bytes)", e.Limit)
	if e.Ended {
		msg += "; the connection was closed"
	}
	return msg
}

// Unwrap makes an Ended error a closed connection.
func (e *ResultTooLargeError) Unwrap() error {
	if e.Ended {
		return ErrConnectionClosed
	}
	return nil
}

// resultCap enforces max_result_bytes on one connection. Readers of the
// server's output (a child's stdout, an HTTP body, an SSE stream) report an
// oversize message by its JSON-RPC id, and the capture transport turns the
// request it belongs to into a *ResultTooLargeError; a message whose id is
// lost ends the connection and fails every call in flight with that error.
type resultCap struct {
	max   int64
	log   *slog.Logger
	onEnd func() // the connection is gone (a pool evicts the session)

	mu       sync.Mutex
	inflight map[string]*capCall
	ended    *ResultTooLargeError
}

// capCall is one request in flight on a capped connection. It fails by
// its context (begin: the requests mcp-go's transports send) or, with no
// context of its own, by its wake (beginWoken: rawLines' requests).
type capCall struct {
	key    string
	limit  int64
	over   atomic.Bool
	ctx    context.Context
	cancel context.CancelCauseFunc
	// failed is a woken call's error; wake tells its waiter.
	failed atomic.Pointer[ResultTooLargeError]
	wake   func()
}

type capCallKey struct{}

func newResultCap(max int64, log *slog.Logger, onEnd func()) *resultCap {
	return &resultCap{max: max, log: log, onEnd: onEnd, inflight: map[string]*capCall{}}
}

// begin registers a request; it fails once the connection was cut.
func (r *resultCap) begin(ctx context.Context, id mcp.RequestId) (*capCall, error) {
	cctx, cancel := context.WithCancelCause(ctx)
	c := &capCall{key: id.String(), limit: r.max, cancel: cancel}
	c.ctx = context.WithValue(cctx, capCallKey{}, c)
	if err := r.register(c); err != nil {
		cancel(nil)
		return nil, err
	}
	return c, nil
}

// beginWoken registers a request that waits on its own: its failure is
// recorded for err and reported by calling wake, which must not block,
// instead of through a context made for it.
func (r *resultCap) beginWoken(id mcp.RequestId, wake func()) (*capCall, error) {
	c := &capCall{key: id.String(), limit: r.max, wake: wake}
	if err := r.register(c); err != nil {
		return nil, err
	}
	return c, nil
}

func (r *resultCap) register(c *capCall) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended != nil {
		return r.ended
	}
	r.inflight[c.key] = c
	return nil
}

// abort fails the call with e.
func (c *capCall) abort(e *ResultTooLargeError) {
	if c.wake != nil {
		c.failed.Store(e)
		c.wake()
		return
	}
	c.cancel(e)
}

func (r *resultCap) finish(c *capCall) {
	r.mu.Lock()
	if r.inflight[c.key] == c {
		delete(r.inflight, c.key)
	}
	r.mu.Unlock()
	if c.cancel != nil {
		c.cancel(nil)
	}
}

// exceeded marks the request with this id key as having an oversize response.
func (r *resultCap) exceeded(key string) *capCall {
	r.mu.Lock()
	c := r.inflight[key]
	r.mu.Unlock()
	if c != nil {
		c.over.Store(true)
	}
	return c
}

// fail marks the request as exceeded and fails it at once, before its
// response has been read to the end.
func (r *resultCap) fail(key string) {
	if c := r.exceeded(key); c != nil {
		c.abort(&ResultTooLargeError{Limit: c.limit})
	}
}

// end cuts the connection: every call in flight fails with the cap error.
func (r *resultCap) end() *ResultTooLargeError {
	r.mu.Lock()
	if r.ended != nil {
		r.mu.Unlock()
		return r.ended
	}
	r.ended = &ResultTooLargeError{Limit: r.max, Ended: true}
	calls := make([]*capCall, 0, len(r.inflight))
	for _, c := range r.inflight {
		calls = append(calls, c)
	}
	r.mu.Unlock()
	r.log.Warn("upstream sent a message above max_result_bytes whose id could not be recovered; closing the connection", "max_result_bytes", r.max)
	if r.onEnd != nil {
		r.onEnd() // before the calls fail, so the next call finds a new session
	}
	for _, c := range calls {
		c.abort(r.ended)
	}
	return r.ended
}

// err is the cap error of a finished call, if its response was too large.
func (c *capCall) err() error {
	if c.over.Load() {
		return &ResultTooLargeError{Limit: c.limit}
	}
	if e := c.failed.Load(); e != nil {
		return e
	}
	var tl *ResultTooLargeError
	if c.ctx != nil && errors.As(context.Cause(c.ctx), &tl) {
		return tl
	}
	return nil
}

// lineLimiter passes a stream of newline-delimited JSON-RPC messages (a
// stdio child's stdout, or with sse set a text/event-stream) through
// unchanged while no message exceeds max bytes. A message is a line, or in
// sse mode an event: every line up to the blank line that ends it, since the
// SSE reader downstream joins all the data lines of an event into one
// string. A longer message is cut at max (the reader downstream sees a
// message that is not valid JSON and drops it), the rest is read and
// discarded while its top-level "id" is scanned for (across data lines), and
// the message is replaced by a JSON-RPC error for that id, so the request
// fails and the stream lives on. Only max bytes of a message are ever
// buffered downstream, and nothing of the discarded rest.
type lineLimiter struct {
	r    io.Reader
	cap  *resultCap
	sse  bool
	gate *requestGate // when set, each server request waits for room in it
	// held are where the server requests in out not yet returned end:
	// Read returns one at a time, each once the gate has room, and
	// reserves its place as it hands over its last byte.
	held []int

	buf     []byte // read buffer
	out     []byte // processed bytes not yet returned
	pos     int    // returned prefix of out
	err     error  // the underlying reader's error, returned once out is drained
	msg     int64  // bytes of the current message so far
	cut     bool   // the current message is being discarded
	failed  bool   // the cut message's request was already failed
	scan    msgScan
	sseLine sseLine
}

// sseLine follows one line of an event stream: its field name, and whether
// the event so far had data lines.
type sseLine struct {
	len   int64
	first byte
	head  []byte // the field name so far, up to "data:"
	data  bool   // this line is a data line (its value goes to the scanner)
	other bool   // this line is another field or a comment
	seen  bool   // the event had a data line before this one
}

func newLineLimiter(r io.Reader, c *resultCap, sse bool) *lineLimiter {
	return &lineLimiter{r: r, cap: c, sse: sse, buf: make([]byte, 32<<10)}
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	for l.pos == len(l.out) {
		if l.err != nil {
			return 0, l.err
		}
		l.out, l.pos, l.held = l.out[:0], 0, l.held[:0]
		if l.gate != nil {
			l.gate.wait() // however the messages before were read
		}
		n, err := l.r.Read(l.buf)
		l.process(l.buf[:n])
		if err != nil {
			if l.cut && err == io.EOF && l.err == nil {
				l.endMsg(false)
			}
			if l.err == nil {
				l.err = err
			}
		}
	}
	if len(l.held) == 0 {
		n := copy(p, l.out[l.pos:])
		l.pos += n
		return n, nil
	}
	l.gate.wait()
	end := l.held[0]
	n := copy(p, l.out[l.pos:end])
	if l.pos += n; l.pos == end {
		l.gate.reserve()
		l.held = l.held[1:]
	}
	return n, nil
}

// process appends what chunk contributes to the output.
func (l *lineLimiter) process(chunk []byte) {
	for len(chunk) > 0 && l.err == nil {
		seg, rest, nl := chunk, []byte(nil), false
		if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
			seg, rest, nl = chunk[:i], chunk[i+1:], true
		}
		chunk = rest
		if l.sse && nl && l.blank(seg) {
			if !l.cut && len(seg) > 0 {
				l.out = append(l.out, seg...)
			}
			l.endMsg(true) // a blank line: the event ends
			continue
		}
		if !l.cut {
			if room := l.cap.max - l.msg; int64(len(seg)) > room {
				l.feed(seg[:room])
				l.out = append(l.out, seg[:room]...)
				l.out = append(l.out, '\n') // the cut message ends here
				l.msg += room
				seg, l.cut = seg[room:], true
			} else {
				l.out = append(l.out, seg...)
			}
		}
		l.msg += int64(len(seg))
		l.feed(seg)
		if l.cut {
			l.early()
		}
		if !nl {
			continue
		}
		if !l.sse {
			l.endMsg(true)
			continue
		}
		if !l.cut {
			l.out = append(l.out, '\n')
		}
		l.sseLine = sseLine{seen: l.sseLine.seen || l.sseLine.data}
	}
}

// blank reports whether the line ending with seg is empty (or only "\r").
func (l *lineLimiter) blank(seg []byte) bool {
	switch n := l.sseLine.len + int64(len(seg)); {
	case n == 0:
		return true
	case n == 1 && len(seg) == 1:
		return seg[0] == '\r'
	case n == 1:
		return l.sseLine.first == '\r'
	}
	return false
}

// feed gives the scanner what seg holds of the message's JSON: all of it on
// stdio, the values of data lines (joined by newlines) on an event stream.
func (l *lineLimiter) feed(seg []byte) {
	if !l.sse {
		l.scan.feed(seg)
		return
	}
	ln := &l.sseLine
	if ln.len == 0 && len(seg) > 0 {
		ln.first = seg[0]
	}
	ln.len += int64(len(seg))
	for len(seg) > 0 && !ln.data && !ln.other {
		ln.head = append(ln.head, seg[0])
		seg = seg[1:]
		if !strings.HasPrefix("data:", string(ln.head)) {
			ln.other = true
		} else if len(ln.head) == len("data:") {
			ln.data = true
			if ln.seen {
				l.scan.feed([]byte{'\n'})
			}
		}
	}
	if ln.data {
		l.scan.feed(seg)
	}
}

// early settles a cut message as soon as the scanner can: one that is not a
// JSON object, or whose id is too long, ends the connection; one whose id
// was read fails its request now, so an endless message cannot keep it
// waiting for the end.
func (l *lineLimiter) early() {
	s := &l.scan
	switch {
	case l.failed:
	case s.bad || s.idLong:
		l.err = l.cap.end()
	case s.idSeen && !s.capturing && !s.method:
		if id, ok := s.id(); ok {
			l.failed = true
			l.cap.fail(id.String())
		}
	}
}

// endMsg finishes a message (terminated: by its newline or blank line, not
// by the end of the stream): a whole one gets its terminator back, a cut one
// its replacement.
func (l *lineLimiter) endMsg(terminated bool) {
	cut, s, data := l.cut, l.scan, !l.sse || l.sseLine.seen || l.sseLine.data
	// The next message's scanner reuses the buffers (s reads them only
	// before that message is fed).
	l.msg, l.cut, l.failed, l.scan, l.sseLine = 0, false, false, msgScan{key: s.key[:0], idRaw: s.idRaw[:0]}, sseLine{}
	if l.sse || (terminated && !cut) {
		// On an event stream the blank line dispatches what passed, even
		// the piece of a cut event, which must not run into the next.
		l.out = append(l.out, '\n')
	}
	if !cut {
		// A request, or what might be one (an escaped key): a message
		// counted that mcp-go does not take up lapses.
		if l.gate != nil && (s.method && s.idSeen || s.escapedKey) {
			l.held = append(l.held, len(l.out))
		}
		return
	}
	id, ok := s.id()
	switch {
	case ok && !s.method:
		l.cap.exceeded(id.String())
		reply, _ := json.Marshal(mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR,
			fmt.Sprintf("response larger than max_result_bytes (%d bytes)", l.cap.max), nil)})
		if l.sse {
			l.out = append(l.out, "event: message\ndata: "...)
			l.out = append(l.out, reply...)
			l.out = append(l.out, "\n\n"...)
			return
		}
		l.out = append(l.out, reply...)
		l.out = append(l.out, '\n')
	case s.method || !data:
		// A notification or a server request (or an event without data):
		// nothing waits on it, so it is dropped.
		l.cap.log.Warn("dropped an upstream message above max_result_bytes", "max_result_bytes", l.cap.max)
	default:
		l.err = l.cap.end()
	}
}

// msgScan follows the top-level object of one JSON-RPC message, byte by
// byte, and records its "id" value and whether it has a "method", in
// bounded memory.
type msgScan struct {
	started, done, bad bool
	depth              int
	inStr, esc         bool
	expectKey, inKey   bool
	key                []byte // the current top-level key (bounded)
	last               byte   // the top-level key whose value follows: 'i' (id), 'm' (method) or 0
	capturing          bool
	idRaw              []byte
	idSeen, idLong     bool
	method             bool
	// escapedKey: a top-level key was written with an escape, so the scan
	// cannot tell whether it is "id" or "method" (encoding/json can).
	escapedKey bool
}

const maxIDBytes = 256

var keyID, keyMethod = []byte("id"), []byte("method")

func (s *msgScan) feed(b []byte) {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if s.bad || s.done {
			return
		}
		if s.inStr {
			if !s.esc && !s.inKey && !s.capturing {
				// Skip the string's body at once: this is the bulk of a result.
				j := bytes.IndexAny(b[i:], `"\`)
				if j < 0 {
					return
				}
				i += j
				c = b[i]
			}
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
				if s.inKey {
					// As encoding/json matches a field (mcp-go's reading):
					// in any case; an escaped key may spell either.
					s.inKey = false
					switch {
					case bytes.EqualFold(s.key, keyID):
						s.last = 'i'
					case bytes.EqualFold(s.key, keyMethod):
						s.last = 'm'
					default:
						s.last = 0
						if bytes.IndexByte(s.key, '\\') >= 0 {
							s.escapedKey = true
						}
					}
				}
			}
			if s.inKey && s.inStr && len(s.key) < 8 {
				s.key = append(s.key, c)
			}
			s.capture(c)
			continue
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			if s.capturing && len(s.idRaw) > 0 {
				s.capture(c)
			}
			continue
		}
		if !s.started {
			if c != '{' {
				s.bad = true
				return
			}
			s.started, s.depth, s.expectKey = true, 1, true
			continue
		}
		switch c {
		case '"':
			s.inStr = true
			if s.depth == 1 && s.expectKey {
				s.inKey, s.key = true, s.key[:0]
			}
			s.capture(c)
		case ':':
			if s.depth == 1 && s.expectKey {
				s.expectKey = false
				switch s.last {
				case 'i':
					s.capturing, s.idRaw, s.idSeen = true, s.idRaw[:0], true
				case 'm':
					s.method = true
				}
				continue
			}
			s.capture(c)
		case ',':
			if s.depth == 1 {
				s.capturing, s.expectKey, s.last = false, true, 0
				continue
			}
			s.capture(c)
		case '{', '[':
			s.depth++
			s.capture(c)
		case '}', ']':
			s.depth--
			if s.depth == 0 {
				s.capturing, s.done = false, true
				continue
			}
			s.capture(c)
		default:
			s.capture(c)
		}
	}
}

func (s *msgScan) capture(c byte) {
	if !s.capturing {
		return
	}
	if len(s.idRaw) >= maxIDBytes {
		s.idLong = true
		return
	}
	s.idRaw = append(s.idRaw, c)
}

// id is the message's non-null id, if it was read whole.
func (s *msgScan) id() (mcp.RequestId, bool) {
	var id mcp.RequestId
	if s.bad || !s.idSeen || s.idLong {
		return id, false
	}
	if err := json.Unmarshal(s.idRaw, &id); err != nil || id.IsNil() {
		return id, false
	}
	return id, true
}

// capRoundTripper bounds the HTTP responses of a streamable HTTP or SSE
// connection: an event stream line by line (lineLimiter), any other body as
// a whole, which fails its request with the cap error past max bytes.
type capRoundTripper struct {
	base http.RoundTripper
	cap  *resultCap
	// gate, when set, holds the reading of an event stream back while the
	// server's requests fill it; never the stream of a reply's own POST,
	// which the gate waits on.
	gate *requestGate
}

var _ http.RoundTripper = (*capRoundTripper)(nil)

func (t *capRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream") {
		l := newLineLimiter(resp.Body, t.cap, true)
		if _, reply := req.Context().Value(replyKey{}).(bool); !reply {
			l.gate = t.gate
		}
		resp.Body = readCloser{l, resp.Body}
	} else {
		call, _ := req.Context().Value(capCallKey{}).(*capCall)
		resp.Body = readCloser{&bodyLimiter{r: resp.Body, max: t.cap.max, call: call}, resp.Body}
	}
	return resp, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// bodyLimiter fails the read past max bytes and marks the call.
type bodyLimiter struct {
	r    io.Reader
	max  int64
	read int64
	call *capCall
}

func (b *bodyLimiter) Read(p []byte) (int, error) {
	if b.read > b.max {
		return 0, &ResultTooLargeError{Limit: b.max}
	}
	if int64(len(p)) > b.max-b.read+1 {
		p = p[:b.max-b.read+1]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > b.max {
		if b.call != nil {
			b.call.over.Store(true)
		}
		return 0, &ResultTooLargeError{Limit: b.max}
	}
	return n, err
}
