package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/principal"
)

// sessionTable is the door's record of every MCP session, by id: the
// principal that opened it (a session id is a handle, not a credential, so
// a request naming another principal's session is answered as if the
// session did not exist), and what the door keeps for it while it lives
// (session). A request finds all of it with one lookup.
type sessionTable struct {
	// parent is the context the sessions' lives are made under.
	parent context.Context
	mu     sync.RWMutex
	by     map[string]*session
	per    map[principal.Principal]int
	// admitting counts, per principal, the initialize requests admitted
	// under the cap whose session may not be minted yet (admit).
	admitting map[principal.Principal]int
}

// session is one MCP session's record. Its owner and life are set when it
// is minted and never change; its life ends when it is removed.
type session struct {
	owner principal.Principal
	// life is the context the session's requests run in (detach.go).
	life   context.Context
	cancel context.CancelFunc
	// touched is when mcp-go last handled a request of the session (unix
	// nanoseconds): its idle sweeper knows only its own requests.
	touched atomic.Int64
	// client is mcp-go's session once registered (nil before).
	client atomic.Pointer[server.ClientSession]
	// elicitation is whether the client declared elicitation, once read
	// from mcp-go's registered session: mcp-go stores the capabilities
	// before it registers the session, and they never change after.
	// 0 not read yet, 1 no, 2 yes.
	elicitation atomic.Uint32

	mu sync.Mutex
	// inflight cancels the door's own calls (fastcall.go) on
	// notifications/cancelled, by JSON-RPC id as sent; tracked numbers
	// its registrations.
	inflight map[string]inflightCall
	tracked  uint64
}

// inflightCall is one registration of a door's call (session.track).
type inflightCall struct {
	cancel context.CancelFunc
	n      uint64
}

func newSessionTable(parent context.Context) *sessionTable {
	return &sessionTable{parent: parent, by: map[string]*session{}, per: map[principal.Principal]int{}, admitting: map[principal.Principal]int{}}
}

// admit takes one of p's max places for the session an initialize request
// may open, or reports false when p's live sessions and the initializes
// already admitted fill them. The place is counted until release is called
// (once mcp-go has served the request, when a session it minted counts as
// live): initializes sent at once cannot all pass a cap that each of them
// checked alone.
func (t *sessionTable) admit(p principal.Principal, max int) (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.per[p]+t.admitting[p] >= max {
		return nil, false
	}
	t.admitting[p]++
	return func() {
		t.mu.Lock()
		if t.admitting[p]--; t.admitting[p] <= 0 {
			delete(t.admitting, p)
		}
		t.mu.Unlock()
	}, true
}

// mint makes a new session id owned by p.
func (t *sessionTable) mint(p principal.Principal) string {
	id := newSessionID()
	e := &session{owner: p}
	e.life, e.cancel = context.WithCancel(t.parent)
	t.mu.Lock()
	t.by[id] = e
	t.per[p]++
	t.mu.Unlock()
	return id
}

// get is live session id's record, or nil.
func (t *sessionTable) get(id string) *session {
	t.mu.RLock()
	e := t.by[id]
	t.mu.RUnlock()
	return e
}

// owned is id's record when it is a live session of p, or nil.
func (t *sessionTable) owned(id string, p principal.Principal) *session {
	if e := t.get(id); e != nil && e.owner == p {
		return e
	}
	return nil
}

// owns reports whether id is a live session of p.
func (t *sessionTable) owns(id string, p principal.Principal) bool { return t.owned(id, p) != nil }

// ofUser are the live sessions of user's principals.
func (t *sessionTable) ofUser(user string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var ids []string
	for id, e := range t.by {
		if e.owner.User == user {
			ids = append(ids, id)
		}
	}
	return ids
}

// remove forgets session id and ends its life, and with it every request
// still running in it.
func (t *sessionTable) remove(id string) {
	t.mu.Lock()
	e, ok := t.by[id]
	if ok {
		delete(t.by, id)
		if t.per[e.owner]--; t.per[e.owner] <= 0 {
			delete(t.per, e.owner)
		}
	}
	t.mu.Unlock()
	if ok {
		e.cancel()
	}
}

// registered records mcp-go's session for its id, once mcp-go has
// registered it; an id not minted here (or already ended) is ignored.
func (t *sessionTable) registered(cs server.ClientSession) {
	if e := t.get(cs.SessionID()); e != nil {
		e.client.Store(&cs)
	}
}

// clientOf is mcp-go's registered session of id, or nil.
func (t *sessionTable) clientOf(id string) server.ClientSession {
	if e := t.get(id); e != nil {
		if cs := e.client.Load(); cs != nil {
			return *cs
		}
	}
	return nil
}

// elicits reports whether the client declared elicitation; info is the
// session's registered mcp-go session (client).
func (e *session) elicits(info server.SessionWithClientInfo) bool {
	switch e.elicitation.Load() {
	case 1:
		return false
	case 2:
		return true
	}
	declared := info.GetClientCapabilities().Elicitation != nil
	if declared {
		e.elicitation.Store(2)
	} else {
		e.elicitation.Store(1)
	}
	return declared
}

// seen records that mcp-go handled a request of the session.
func (e *session) seen() { e.touched.Store(time.Now().UnixNano()) }

// fresh reports whether mcp-go handled a request of the session within d.
func (e *session) fresh(d time.Duration) bool {
	return time.Since(time.Unix(0, e.touched.Load())) < d
}

// track registers cancel as the door's call with JSON-RPC id key, and
// returns the registration's number, which untrack takes.
func (e *session) track(key string, cancel context.CancelFunc) uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.inflight == nil {
		e.inflight = map[string]inflightCall{}
	}
	e.tracked++
	e.inflight[key] = inflightCall{cancel: cancel, n: e.tracked}
	return e.tracked
}

// untrack forgets registration n of key, unless a later call with the
// same id has replaced it.
func (e *session) untrack(key string, n uint64) {
	e.mu.Lock()
	if c, ok := e.inflight[key]; ok && c.n == n {
		delete(e.inflight, key)
	}
	e.mu.Unlock()
}

// cancelled cancels the door's call with JSON-RPC id key, if it runs one.
func (e *session) cancelled(key string) {
	e.mu.Lock()
	c := e.inflight[key]
	e.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
}

// sessionEnded forgets an MCP session that was deleted or idled out and
// retires the stdio sessions of its default thread (SessionThread): nothing
// can call into that thread again, so its processes would otherwise idle in
// the pool until its timeout, one per ended session. A process a durable
// task pins stays (the pool asks the Pinned hook). Under ThreadPerUser the
// session had no thread of its own, and the user's default thread stays.
func (s *Server) sessionEnded(id string) {
	s.sessions.remove(id)
	if s.cache != nil && id != "" && !s.threadPerUser {
		s.cache.RetireThread(SessionThread(id))
	}
}

var errSessionNotFound = errors.New("session not found")

// resolver hands mcp-go a session-id manager bound to the request's
// principal. mcp-go calls it with a nil request from its idle sweeper.
type resolver struct{ o *sessionTable }

func (r resolver) ResolveSessionIdManager(req *http.Request) server.SessionIdManager {
	m := ownedIDs{o: r.o}
	if req != nil {
		m.p, m.authenticated = principal.FromContext(req.Context())
		m.minted, _ = req.Context().Value(mintedKey{}).(*string)
	}
	return m
}

// ownedIDs is mcp-go's session-id manager for one request.
type ownedIDs struct {
	o             *sessionTable
	p             principal.Principal
	authenticated bool
	minted        *string // where the request records the id minted for it, if it does
}

func (m ownedIDs) Generate() string {
	if !m.authenticated {
		return "" // no session; Streamable refuses such requests anyway
	}
	id := m.o.mint(m.p)
	if m.minted != nil {
		*m.minted = id
	}
	return id
}

// mintedKey is the context key of where a request that may open a session
// (an initialize POST, a legacy SSE GET) records the id minted for it.
type mintedKey struct{}

// recordMinted returns r carrying a place for the session id minted while
// mcp-go serves it, and what to call once mcp-go has: a session mcp-go
// did not register by then (the client went away before the answer to its
// initialize, or registration failed) never will be, and no request can
// name it, so it is forgotten and frees its place under the cap.
func (s *Server) recordMinted(r *http.Request) (*http.Request, func()) {
	minted := new(string)
	return r.WithContext(context.WithValue(r.Context(), mintedKey{}, minted)), func() {
		if e := s.sessions.get(*minted); e != nil && e.client.Load() == nil {
			s.sessionEnded(*minted)
		}
	}
}

func (m ownedIDs) Validate(id string) (isTerminated bool, err error) {
	if !m.authenticated || !m.o.owns(id, m.p) {
		return false, errSessionNotFound
	}
	return false, nil
}

func (m ownedIDs) Terminate(id string) (isNotAllowed bool, err error) {
	if m.authenticated && !m.o.owns(id, m.p) {
		return true, nil
	}
	m.o.remove(id)
	return false, nil
}

// CORSHeaders are the request headers a browser MCP client sends beyond
// the REST door's (the protocol-version, session, method and name headers,
// Last-Event-ID to resume, the thread header) and the answer headers it
// reads. CORS has no wildcard for a header prefix, so the per-secret
// headers (HeaderSecretPrefix) cannot be listed: a page sends its secrets
// as the call's _meta (MetaSecrets).
func (s *Server) CORSHeaders() (allow, expose []string) {
	return []string{"Last-Event-ID", "Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", HeaderThreadID},
		[]string{"Mcp-Session-Id", "Mcp-Protocol-Version"}
}

// Streamable serves POST, GET and DELETE /mcp. A request carrying an
// Mcp-Session-Id the caller does not own is 404, like an unknown session
// (mcp-go does not check the id of a GET), and a GET that names no session
// is 400 (mcp-go would open an unbound one).
func (s *Server) Streamable() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := principal.FromContext(r.Context())
		if !ok {
			http.Error(w, errUnauthenticated.Error(), http.StatusUnauthorized)
			return
		}
		s.used()
		modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
		id := r.Header.Get(server.HeaderKeySessionID)
		var sess *session
		if id != "" && !modern {
			sess = s.sessions.owned(id, p)
		}
		switch {
		case id != "" && !modern && sess == nil:
			http.Error(w, "Session not found", http.StatusNotFound)
			return
		case id == "" && !modern && (r.Method == http.MethodGet || r.Method == http.MethodDelete):
			http.Error(w, "Bad Request: Mcp-Session-Id header is required", http.StatusBadRequest)
			return
		}
		if r.Method == http.MethodGet && id != "" {
			defer s.listeners.opened(id)()
		}
		if s.serveCall(w, r, id, sess) {
			return
		}
		var method string
		if r.Method == http.MethodPost {
			method = peekMethod(r, "initialize", "subscriptions/listen", "tasks/result")
		}
		if s.streams != nil && heldOpen(method) {
			release, ok := s.streams.Acquire(p.User)
			if !ok {
				http.Error(w, fmt.Sprintf("too many open event streams: this caller already has %d open (http.per_principal.max_event_streams)", s.streams.Max()), http.StatusTooManyRequests)
				return
			}
			defer release()
		}
		r = r.WithContext(context.WithValue(r.Context(), streamableKey{}, true))
		if s.serveTasks(w, r, id, modern) {
			return
		}
		if method == string(mcp.MethodInitialize) {
			// mcp-go opens a session for every initialize, whatever
			// session header or protocol version it comes with.
			release, ok := s.sessions.admit(p, s.maxSessions)
			if !ok {
				http.Error(w, fmt.Sprintf("too many MCP sessions: this caller already holds %d (end one with DELETE /mcp, or let one idle out)", s.maxSessions), http.StatusTooManyRequests)
				return
			}
			defer release()
			var done func()
			r, done = s.recordMinted(r)
			defer done()
		}
		s.streamable.ServeHTTP(w, r)
	})
}

// heldOpen reports whether a POST of method is answered by a stream that
// stays open until an event comes: a subscriptions/listen, in either
// revision and either form, or a 2025-11-25 tasks/result, which waits for
// its task to end.
func heldOpen(method string) bool {
	return method == string(mcp.MethodSubscriptionsListen) || method == methodTasksResult
}

// peekMethod is the method of the JSON-RPC request in a POST body (the
// gateway has buffered it, within its body limit), as mcp-go reads it, and
// puts the body back. A body that spells none of spellings, and has no
// escape (\u0069, \/) that could spell one, is not decoded ("").
func peekMethod(r *http.Request, spellings ...string) string {
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	if bytes.IndexByte(body, '\\') < 0 && !slices.ContainsFunc(spellings, func(m string) bool { return bytes.Contains(body, []byte(m)) }) {
		return ""
	}
	var msg struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return ""
	}
	return msg.Method
}

// SSE serves GET /sse, the legacy HTTP+SSE stream; its session is bound to
// the caller like a streamable one.
func (s *Server) SSE() http.Handler {
	h := s.sse.SSEHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := principal.FromContext(r.Context()); !ok {
			http.Error(w, errUnauthenticated.Error(), http.StatusUnauthorized)
			return
		}
		s.used()
		r, done := s.recordMinted(r)
		defer done()
		h.ServeHTTP(&noWildcardOrigin{ResponseWriter: w, allowed: w.Header().Get(allowOrigin)}, r)
	})
}

// Messages serves POST /messages?sessionId=..., the legacy transport's
// requests; another principal's session id is 404.
func (s *Server) Messages() http.Handler {
	h := s.sse.MessageHandler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := principal.FromContext(r.Context())
		if !ok {
			http.Error(w, errUnauthenticated.Error(), http.StatusUnauthorized)
			return
		}
		s.used()
		if id := r.URL.Query().Get("sessionId"); id != "" && !s.sessions.owns(id, p) {
			http.Error(w, "Session not found", http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
	})
}

const allowOrigin = "Access-Control-Allow-Origin"

// noWildcardOrigin undoes the "Access-Control-Allow-Origin: *" mcp-go's SSE
// stream sets when it has no CORS settings of its own: the answer is what
// the gateway's CORS middleware set (an allowed origin, or nothing), so no
// other page can read the stream.
type noWildcardOrigin struct {
	http.ResponseWriter
	allowed string
	wrote   bool
}

func (w *noWildcardOrigin) strip() {
	if w.wrote {
		return
	}
	w.wrote = true
	if w.Header().Get(allowOrigin) == "*" {
		if w.allowed == "" {
			w.Header().Del(allowOrigin)
		} else {
			w.Header().Set(allowOrigin, w.allowed)
		}
	}
}

func (w *noWildcardOrigin) WriteHeader(code int) { w.strip(); w.ResponseWriter.WriteHeader(code) }

func (w *noWildcardOrigin) Write(b []byte) (int, error) { w.strip(); return w.ResponseWriter.Write(b) }

func (w *noWildcardOrigin) Flush() {
	w.strip()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *noWildcardOrigin) Unwrap() http.ResponseWriter { return w.ResponseWriter }
