package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/header"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
)

// HTTPOptions bound the gateway's HTTP edge. A zero field takes the default
// of the settings' http: section.
type HTTPOptions struct {
	// AllowedHosts are Host values served besides the loopback names (and,
	// with API keys, IP literals); see settings.HTTP.AllowedHosts.
	AllowedHosts []string
	// AllowedOrigins are the browser origins served; any other Origin is 403.
	AllowedOrigins []string
	// MaxConnections caps open client connections (one more gets 503).
	MaxConnections int
	// ReadHeaderTimeout, BodyReadTimeout, WriteTimeout and IdleTimeout bound
	// a client's headers, its body, each response (each write on an event
	// stream) and an idle keep-alive connection.
	ReadHeaderTimeout, BodyReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxCallsPerPrincipal and MaxStreamsPerPrincipal cap one user's tool
	// calls in flight and open event streams (beyond: 429).
	MaxCallsPerPrincipal, MaxStreamsPerPrincipal int
}

// HTTPOptionsFrom converts the validated http: section.
func HTTPOptionsFrom(h settings.HTTP) HTTPOptions {
	o := HTTPOptions{AllowedHosts: h.AllowedHosts, AllowedOrigins: h.AllowedOrigins, MaxConnections: h.MaxConnections,
		MaxCallsPerPrincipal: h.PerPrincipal.MaxConcurrentCalls, MaxStreamsPerPrincipal: h.PerPrincipal.MaxEventStreams}
	o.ReadHeaderTimeout, o.BodyReadTimeout, o.WriteTimeout, o.IdleTimeout = h.Durations()
	return o
}

// withDefaults fills zero fields from the settings' defaults.
func (o HTTPOptions) withDefaults() HTTPOptions {
	d := HTTPOptionsFrom(settings.DefaultHTTP())
	for _, f := range []struct{ v, def *time.Duration }{{&o.ReadHeaderTimeout, &d.ReadHeaderTimeout},
		{&o.BodyReadTimeout, &d.BodyReadTimeout}, {&o.WriteTimeout, &d.WriteTimeout}, {&o.IdleTimeout, &d.IdleTimeout}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	for _, f := range []struct{ v, def *int }{{&o.MaxConnections, &d.MaxConnections},
		{&o.MaxCallsPerPrincipal, &d.MaxCallsPerPrincipal}, {&o.MaxStreamsPerPrincipal, &d.MaxStreamsPerPrincipal}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return o
}

// edge holds the parsed Host and Origin rules.
type edge struct {
	hosts   []settings.HostPattern
	origins map[string]bool
	// originList is origins in configured order, for the CORS answers.
	originList []string
}

func newEdge(o HTTPOptions) (edge, []error) {
	e := edge{origins: map[string]bool{}}
	var errs []error
	for i, h := range o.AllowedHosts {
		p, err := settings.ParseHostPattern(h)
		if err != nil {
			errs = append(errs, fmt.Errorf("allowed_hosts[%d]: %w", i, err))
			continue
		}
		e.hosts = append(e.hosts, p)
	}
	for i, v := range o.AllowedOrigins {
		n, err := settings.NormalizeOrigin(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("allowed_origins[%d]: %w", i, err))
			continue
		}
		e.origins[n] = true
		e.originList = append(e.originList, n)
	}
	return e, errs
}

// hostAllowed reports whether a Host header names this host: a loopback
// name, an IP literal when keys are configured (a DNS-rebinding page can
// only reach the host under a name), or an allowed_hosts entry.
func (s *Server) hostAllowed(value string) bool {
	if last := s.allowedHost.Load(); last != nil && *last == value {
		return true // the usual case: every request names the same Host
	}
	if !s.hostServed(value, true) {
		return false
	}
	s.allowedHost.Store(&value)
	return true
}

// hostServed is hostAllowed, where a "*" entry counts only with wildcard.
func (s *Server) hostServed(value string, wildcard bool) bool {
	host, port, err := settings.SplitHost(value)
	if err != nil {
		return false
	}
	ip := strings.Trim(host, "[]")
	if principal.IsLoopbackHost(ip) || (!s.auth.Open() && net.ParseIP(ip) != nil) {
		return true
	}
	for _, p := range s.edge.hosts {
		if (wildcard || p.Host != "*") && p.Matches(host, port) {
			return true
		}
	}
	return false
}

// ownPage reports whether a request comes from a page the host served
// itself (the dashboard at /ui): the browser marks it Sec-Fetch-Site
// same-origin and its Origin names the request's own Host. Only a Host
// served as loopback, an IP literal or a named allowed_hosts entry counts:
// under "*" a DNS-rebinding page is the same origin as its own name.
func (s *Server) ownPage(origin string, req *http.Request) bool {
	if req.Header.Get("Sec-Fetch-Site") != "same-origin" {
		return false
	}
	scheme, _, _ := strings.Cut(origin, "://")
	own, err := settings.NormalizeOrigin(scheme + "://" + req.Host)
	if err != nil || own != origin {
		return false
	}
	return s.hostServed(req.Host, false)
}

// stateChanging are the methods that must carry application/json even
// without a body: a browser's simple request can send any of the others.
func stateChanging(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// checkEdge refuses what a web page could send: a Host this host does not
// serve (DNS rebinding, 403), an Origin not in allowed_origins and not the
// host's own page (ownPage) (403), a
// request a browser marks as coming from another page (Sec-Fetch-Site other
// than none or same-origin) without an allowed Origin (403), and a
// state-changing or body-carrying request whose Content-Type is not
// application/json (415), which no cross-site simple request can be. It runs
// before authentication on every route, /healthz and any later /mcp included.
func (s *Server) checkEdge(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if !s.hostAllowed(req.Host) {
			return apierror.New(http.StatusForbidden, "the Host header does not name this host; add the name to http.allowed_hosts in the settings")
		}
		origins := req.Header.Values(echo.HeaderOrigin)
		if len(origins) > 0 {
			n, err := settings.NormalizeOrigin(origins[0])
			if len(origins) > 1 || err != nil || !(s.edge.origins[n] || s.ownPage(n, req)) {
				return apierror.New(http.StatusForbidden, "cross-origin request refused: the Origin is not in http.allowed_origins")
			}
		} else if site := req.Header.Get("Sec-Fetch-Site"); site != "" && site != "none" && site != "same-origin" {
			// A no-cors GET (an <img>, a <script>, a link) carries no
			// Origin, but a browser marks it with Sec-Fetch-Site: such a
			// request from another page (another port of localhost is
			// "same-site") could still start servers or hold streams.
			return apierror.New(http.StatusForbidden, "cross-site request refused: Sec-Fetch-Site is %s and the request names no allowed Origin", site)
		}
		// An MCP session's DELETE carries no body and, from the transport's
		// clients, no Content-Type; a browser cannot send a DELETE without
		// a preflight, and the Origin rule above already ran.
		mcpDelete := req.Method == http.MethodDelete && req.ContentLength == 0 && c.Path() == "/mcp"
		if (stateChanging(req.Method) || req.ContentLength != 0) && !mcpDelete {
			if !header.IsJSON(req.Header.Get(echo.HeaderContentType)) {
				return apierror.New(http.StatusUnsupportedMediaType, "Content-Type must be application/json, also on a %s without a body", req.Method)
			}
		}
		return next(c)
	}
}

// deadlines bounds one request's body read and response write per request,
// through the connection, instead of server-wide: a server-wide read
// timeout would cancel a long call or an event stream once it passed, and
// a write timeout would end every stream. It is first in the edge chain,
// so that every answer is bounded, a refusal too: net/http reads (and
// drops) up to 256 KiB of a body nobody read before it writes an answer,
// which a client trickling its body could otherwise stretch without end.
// The body is read whole later (wholeBody, under BodyLimit) within
// http.body_read_timeout; on Serve's connections that deadline is given to
// the socket only if a read has to wait for it, so a body that came with
// its headers costs no timer. The write deadline starts when the response
// does, so it bounds a slow reader, not a slow tool. Event streams bound
// each write instead.
func (s *Server) deadlines(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		lc, rc := connDeadlines(c)
		// Lift the previous response's deadline on a kept-alive connection
		// (a "100 Continue" is written before this response starts).
		_ = rc.SetWriteDeadline(time.Time{})
		c.Response().Before(func() {
			if _, stream := c.Response().Writer.(*streamWriter); !stream {
				_ = rc.SetWriteDeadline(time.Now().Add(s.http.WriteTimeout))
			}
		})
		if req.ContentLength != 0 {
			if deadline := time.Now().Add(s.http.BodyReadTimeout); lc != nil {
				lc.deferReadDeadline(deadline) // most bodies came with their headers
			} else {
				_ = rc.SetReadDeadline(deadline)
			}
		}
		return next(c)
	}
}

// connDeadlines is what sets the deadlines of c's connection: through
// Serve the connection itself (lc), through another server (a test's) the
// response controller that reaches it.
func connDeadlines(c echo.Context) (lc *limitedConn, rc deadliner) {
	lc, _ = c.Request().Context().Value(connKey{}).(*limitedConn)
	if lc != nil {
		return lc, lc
	}
	return nil, http.NewResponseController(c.Response().Writer)
}

// wholeBody reads a request's body whole (BodyLimit, before it, caps it)
// under the deadline deadlines set, then lifts that deadline.
func (s *Server) wholeBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.ContentLength == 0 {
			return next(c)
		}
		body, err := readAll(req.Body, req.ContentLength)
		if err != nil {
			// Keep the deadline and close after the answer: the rest of
			// this body is never read.
			c.Response().Header().Set(echo.HeaderConnection, "close")
		} else {
			_, rc := connDeadlines(c)
			_ = rc.SetReadDeadline(time.Time{})
		}
		var he *echo.HTTPError
		switch {
		case errors.As(err, &he):
			return he
		case errors.Is(err, os.ErrDeadlineExceeded):
			return apierror.New(http.StatusRequestTimeout, "the request body did not arrive within http.body_read_timeout (%s)", s.http.BodyReadTimeout)
		case err != nil:
			return apierror.New(http.StatusBadRequest, "could not read the request body")
		}
		req.Body = newReadBody(body)
		return next(c)
	}
}

// deadliner sets a connection's deadlines: the connection itself, or the
// response controller that reaches it.
type deadliner interface {
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// connKey is the context key of the *limitedConn a request came on (Serve's
// ConnContext).
type connKey struct{}

// preallocBody is the largest declared body readAll allocates whole before
// it arrives. A client (not yet authenticated here) can declare any length
// up to BodyLimit's cap and then send nothing, so a longer body's buffer
// grows only as its bytes come, as io.ReadAll's does.
const preallocBody = 16 << 10

// readAll reads a request body whole: a short one of declared length into
// one buffer of that length (net/http ends the body there), instead of
// growing a buffer from 512 bytes; any other as io.ReadAll does.
func readAll(body io.Reader, declared int64) ([]byte, error) {
	if declared <= 0 || declared > preallocBody {
		return io.ReadAll(body)
	}
	b := make([]byte, declared)
	n, err := io.ReadFull(body, b) // a short body is io.ErrUnexpectedEOF, as io.ReadAll has it from net/http
	return b[:n], err
}

// readBody is a request body the edge has read whole. A handler outside
// Echo (the MCP door) takes its bytes with Unread instead of reading a copy
// of them; any other reader reads it as a body.
type readBody struct {
	bytes.Reader
	whole []byte
}

func newReadBody(b []byte) *readBody {
	rb := &readBody{whole: b}
	rb.Reset(b)
	return rb
}

func (*readBody) Close() error { return nil }

// Unread is the whole body while none of it has been read; once some has,
// it reports false and the rest is what Read returns.
func (b *readBody) Unread() ([]byte, bool) { return b.whole, int64(b.Len()) == b.Size() }

// readBodyOf is the whole body the edge read for c's request, however much
// of it a handler has read since; false when the edge read none (no body).
func readBodyOf(c echo.Context) ([]byte, bool) {
	if b, ok := c.Request().Body.(*readBody); ok {
		return b.whole, true
	}
	return nil, false
}

// callLimit caps one user's tool calls in flight. An internal principal's
// call counts against the user it names in user_id, so one backend serving
// many users is limited per user, not as one.
func (s *Server) callLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		p := principalFrom(c)
		user := p.User
		if body, ok := readBodyOf(c); ok && p.Role == settings.RoleInternal {
			var b struct {
				UserID string `json:"user_id"`
			}
			if json.Unmarshal(body, &b) == nil && b.UserID != "" {
				user = b.UserID
			}
		}
		release, ok := s.callSlots.Acquire(user)
		if !ok {
			return apierror.New(http.StatusTooManyRequests, "too many concurrent tool calls: this caller already has %d in flight (http.per_principal.max_concurrent_calls)", s.callSlots.Max())
		}
		defer release()
		return next(c)
	}
}

// streamWrites bounds each write of a response instead of the whole
// response: an MCP POST may answer with an event stream that lasts as long
// as its tool call and relays progress meanwhile.
func (s *Server) streamWrites(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		w := c.Response()
		w.Writer = &streamWriter{ResponseWriter: w.Writer, rc: http.NewResponseController(w.Writer), timeout: s.http.WriteTimeout}
		return next(c)
	}
}

// eventStream marks a long-lived response: it caps the caller's open
// streams and replaces the response's write deadline with one per write, so
// the stream lives as long as the client reads and a client that stops
// reading is dropped after http.write_timeout.
func (s *Server) eventStream(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		release, ok := s.streamSlots.Acquire(principalFrom(c).User)
		if !ok {
			return apierror.New(http.StatusTooManyRequests, "too many open event streams: this caller already has %d open (http.per_principal.max_event_streams)", s.streamSlots.Max())
		}
		defer release()
		return s.streamWrites(next)(c)
	}
}

// streamWriter sets a fresh write deadline before each write and flush.
type streamWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *streamWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	return w.ResponseWriter.Write(p)
}

func (w *streamWriter) FlushError() error {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	return w.rc.Flush()
}

func (w *streamWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// limitListener caps open connections. One past the cap is answered 503
// and closed at once, so a flood of idle or slow connections cannot queue
// legitimate clients behind it.
type limitListener struct {
	net.Listener
	open    chan struct{} // one token per open connection
	refuser chan struct{} // bounds the goroutines answering refused connections
}

// maxRefusing bounds refused connections being answered at once; beyond it
// they are closed without an answer.
const maxRefusing = 64

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, open: make(chan struct{}, max), refuser: make(chan struct{}, maxRefusing)}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.open <- struct{}{}:
			return &limitedConn{Conn: c, free: func() { <-l.open }}, nil
		default:
			l.refuse(c)
		}
	}
}

// refuse answers 503 and closes, reading what the client sent first so the
// close does not reset the connection before the answer is read.
func (l *limitListener) refuse(c net.Conn) {
	select {
	case l.refuser <- struct{}{}:
	default:
		_ = c.Close()
		return
	}
	go func() {
		defer func() { <-l.refuser }()
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		body := fmt.Sprintf(`{"error":"too many open connections (http.max_connections is %d); retry later"}`, cap(l.open))
		_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}()
}

// limitedConn gives its token back once, on the first Close. It keeps the
// deadlines it last gave the connection, so that setting one again (the HTTP
// server lifts a lifted read deadline on every request) updates no timer,
// and it can hold a read deadline back until a read has to wait for the
// network (deferReadDeadline).
type limitedConn struct {
	net.Conn
	once sync.Once
	free func()

	mu          sync.Mutex
	read, write time.Time // as last given to Conn
	deferred    time.Time // the read deadline for the next Read, when hasDeferred
	hasDeferred atomic.Bool
}

func (c *limitedConn) Read(p []byte) (int, error) {
	if c.hasDeferred.Load() {
		c.mu.Lock()
		if c.hasDeferred.Load() {
			c.hasDeferred.Store(false)
			_ = c.readDeadlineLocked(c.deferred)
		}
		c.mu.Unlock()
	}
	return c.Conn.Read(p)
}

func (c *limitedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hasDeferred.Store(false)
	if err := c.readDeadlineLocked(t); err != nil {
		return err
	}
	return c.writeDeadlineLocked(t)
}

func (c *limitedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hasDeferred.Store(false)
	return c.readDeadlineLocked(t)
}

func (c *limitedConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeDeadlineLocked(t)
}

// deferReadDeadline sets a read deadline that only a Read reaching the
// network needs: it is given to the connection by the next Read, unless a
// read deadline is set first. A request body the HTTP server has already
// buffered is then read, and its deadline lifted, without a timer update.
func (c *limitedConn) deferReadDeadline(t time.Time) {
	c.mu.Lock()
	c.deferred = t
	c.hasDeferred.Store(true)
	c.mu.Unlock()
}

func (c *limitedConn) readDeadlineLocked(t time.Time) error {
	return changeDeadline(&c.read, t, c.Conn.SetReadDeadline)
}

func (c *limitedConn) writeDeadlineLocked(t time.Time) error {
	return changeDeadline(&c.write, t, c.Conn.SetWriteDeadline)
}

// changeDeadline gives t to set unless it is *last, the deadline set before,
// and records it.
func changeDeadline(last *time.Time, t time.Time, set func(time.Time) error) error {
	if t.Equal(*last) {
		return nil
	}
	if err := set(t); err != nil {
		return err
	}
	*last = t
	return nil
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.free)
	return err
}

// CloseWrite half-closes when the connection can, which the HTTP server
// uses to let a client read an error answer before the close.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
