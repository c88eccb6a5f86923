package mcpserver

import (
	"context"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/principal"
)

// A request of a session-based revision (2024-11-05…2025-11-25) is handled
// in its session's life (session.life), not its HTTP request's, because the
// spec reads a dropped connection as nothing more than that (the client
// resumes with Last-Event-ID and is redelivered the result from the event
// store). Such a call still ends on notifications/cancelled (mcp-go cancels
// below this context), on the session's end (DELETE, idle expiry, Close)
// and on tool_call_timeout (the call path's own deadline). A 2026-07-28
// request has no session: closing it is its cancellation, so it keeps its
// request's context.

// streamableContext is mcp-go's HTTP context function for streamable HTTP:
// withCaller's, and for a request of a live session of the caller's, the
// session's life in place of the request's cancellation.
func (s *Server) streamableContext(ctx context.Context, r *http.Request) context.Context {
	ctx = withCaller(ctx, r)
	cs := server.ClientSessionFromContext(ctx)
	id := r.Header.Get(server.HeaderKeySessionID)
	p, ok := principal.FromContext(r.Context())
	if !ok || cs == nil || cs.SessionID() == "" || cs.SessionID() != id {
		return ctx // 2026-07-28 (mcp-go's ephemeral session has no id), or initialize
	}
	e := s.sessions.owned(id, p)
	if e == nil {
		// The session ended between mcp-go's check and here: the request
		// runs in its life, ended.
		ended, end := context.WithCancel(context.Background())
		end()
		return bindToSession(ctx, ended)
	}
	e.seen() // mcp-go reset the session's idle clock
	return bindToSession(ctx, e.life)
}

// sessionBound carries a request's values and its session's cancellation.
// It reads the request's values itself rather than through
// context.WithoutCancel, whose every lookup allocates; the one key it
// must not pass to the request is the one the context package finds a
// cancellation by (cancelKey), which goes to the session's life: a
// context made below this one is then canceled, and its cause read, with
// the session, never with the request.
type sessionBound struct {
	request context.Context // its values only
	life    context.Context
}

// cancelKey is the key the context package looks up to find the nearest
// cancellation, learnt once by asking context.Cause of an ended context
// that records what it is asked.
var cancelKey = func() any {
	ended, end := context.WithCancel(context.Background())
	end()
	var key any
	_ = context.Cause(keyProbe{Context: ended, asked: &key})
	return key
}()

// keyProbe records the last key it is asked for.
type keyProbe struct {
	context.Context
	asked *any
}

func (p keyProbe) Value(key any) any { *p.asked = key; return nil }

// bindToSession returns ctx's values with life's cancellation.
func bindToSession(ctx, life context.Context) context.Context {
	if cancelKey == nil {
		// The context package no longer finds cancellations as learnt:
		// WithoutCancel keeps the request's out, whatever the key.
		ctx = context.WithoutCancel(ctx)
	}
	return &sessionBound{request: ctx, life: life}
}

func (c *sessionBound) Deadline() (time.Time, bool) { return c.life.Deadline() }
func (c *sessionBound) Done() <-chan struct{}       { return c.life.Done() }
func (c *sessionBound) Err() error                  { return c.life.Err() }

// AfterFunc lets a context made below this one register on the session's
// life rather than start a goroutine, should the context package not find
// the life's cancellation through Value.
func (c *sessionBound) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(c.life, f) }

func (c *sessionBound) Value(key any) any {
	if key == cancelKey {
		return c.life.Value(key)
	}
	return c.request.Value(key)
}
