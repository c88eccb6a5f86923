// Package sessionpool keeps stdio MCP sessions alive per (server, scope),
// where the scope is one user's thread: a stateful server keeps its state for
// that thread, and two users never share a process. It is DeerFlow's
// MCPSessionPool: an LRU cap, an idle timeout, one owner goroutine per session
// that opens and closes it, and eviction that only ever removes the session
// that failed, never its replacement.
package sessionpool

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// Defaults (DeerFlow's MAX_SESSIONS; an idle session is closed after the timeout).
const (
	DefaultMaxSessions = 256
	DefaultIdleTimeout = 30 * time.Minute
)

// ErrClosed is returned after Close.
var ErrClosed = errors.New("session pool closed")

// Key names one session. Config identifies the server settings the session
// was started with, so a session started under an old configuration is never
// handed to a call made under a new one.
type Key struct {
	Server string
	Scope  string
	Config string
}

// Session is what the pool keeps: an upstream connection.
type Session interface {
	Close() error
}

// DialFunc opens a session. exited must be called if the session dies on its
// own (the pool then evicts it at once).
type DialFunc[S Session] func(ctx context.Context, exited func()) (S, error)

// Pool is safe for concurrent use.
type Pool[S Session] struct {
	max  int
	idle time.Duration

	mu      sync.Mutex
	entries map[Key]*entry[S]
	lru     *list.List // of *entry, most recent at the front
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

type entry[S Session] struct {
	key      Key
	elem     *list.Element
	ready    chan struct{} // closed once the owner has dialled (or failed)
	sess     S
	err      error
	release  chan struct{} // closed to tell the owner to close the session
	lastUsed time.Time
}

// New returns a pool; zero values mean the defaults.
func New[S Session](maxSessions int, idle time.Duration) *Pool[S] {
	if maxSessions <= 0 {
		maxSessions = DefaultMaxSessions
	}
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	p := &Pool[S]{max: maxSessions, idle: idle, entries: map[Key]*entry[S]{}, lru: list.New(), stop: make(chan struct{})}
	p.wg.Go(p.janitor)
	return p
}

// Get returns the live session for key, joining a creation in flight or
// starting one (bounded by ctx, which only limits the wait: the session's own
// life is the owner goroutine's). The least recently used session is closed
// when the pool is full.
func (p *Pool[S]) Get(ctx context.Context, key Key, dial DialFunc[S]) (S, error) {
	var zero S
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return zero, ErrClosed
	}
	e, ok := p.entries[key]
	if !ok {
		e = &entry[S]{key: key, ready: make(chan struct{}), release: make(chan struct{})}
		e.elem = p.lru.PushFront(e)
		p.entries[key] = e
		var victims []*entry[S]
		for p.lru.Len() > p.max {
			v := p.lru.Back().Value.(*entry[S])
			p.removeLocked(v)
			victims = append(victims, v)
		}
		p.wg.Go(func() { p.own(e, dial) })
		for _, v := range victims {
			close(v.release)
		}
	} else {
		p.lru.MoveToFront(e.elem)
	}
	e.lastUsed = time.Now()
	p.mu.Unlock()

	select {
	case <-e.ready:
	case <-ctx.Done():
		return zero, ctx.Err()
	}
	if e.err != nil {
		return zero, e.err
	}
	return e.sess, nil
}

// own is the session's owner goroutine: it opens the session, publishes it,
// and closes it when released.
func (p *Pool[S]) own(e *entry[S], dial DialFunc[S]) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-e.release: // released while dialling: abandon the dial
			cancel()
		case <-e.ready:
		}
	}()
	sess, err := dial(ctx, func() { p.Evict(e.key, e) })
	cancel()
	if err != nil {
		// Forget the failed entry before publishing the failure, so a Get
		// that follows it dials again instead of finding the stale error.
		p.mu.Lock()
		if p.entries[e.key] == e {
			p.removeLocked(e)
		}
		p.mu.Unlock()
	}
	e.sess, e.err = sess, err
	close(e.ready)
	if err != nil {
		return
	}
	<-e.release
	_ = sess.Close()
}

// Evict removes the session of key if it is still the one identified by
// token (the value Get's dial saw, or the session returned by Get): a late
// failure of an old session never removes its replacement.
func (p *Pool[S]) Evict(key Key, token any) {
	p.mu.Lock()
	e, ok := p.entries[key]
	if !ok || !(token == any(e) || sameSession(e, token)) {
		p.mu.Unlock()
		return
	}
	p.removeLocked(e)
	p.mu.Unlock()
	close(e.release)
}

func sameSession[S Session](e *entry[S], token any) bool {
	select {
	case <-e.ready:
	default:
		return false
	}
	if e.err != nil {
		return false
	}
	s, ok := token.(S)
	return ok && any(s) == any(e.sess)
}

func (p *Pool[S]) removeLocked(e *entry[S]) {
	delete(p.entries, e.key)
	p.lru.Remove(e.elem)
}

// CloseServer closes every session of server (its config changed).
func (p *Pool[S]) CloseServer(server string) {
	p.closeWhere(func(k Key) bool { return k.Server == server })
}

// CloseAll closes every session; the pool stays usable.
func (p *Pool[S]) CloseAll() { p.closeWhere(func(Key) bool { return true }) }

func (p *Pool[S]) closeWhere(match func(Key) bool) {
	p.mu.Lock()
	var victims []*entry[S]
	for k, e := range p.entries {
		if match(k) {
			p.removeLocked(e)
			victims = append(victims, e)
		}
	}
	p.mu.Unlock()
	for _, v := range victims {
		close(v.release)
	}
}

// Close closes every session and waits for their owners to finish.
func (p *Pool[S]) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.stop)
	p.mu.Unlock()
	p.CloseAll()
	p.wg.Wait()
}

// Counts returns the number of sessions per server.
func (p *Pool[S]) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k := range p.entries {
		out[k.Server]++
	}
	return out
}

// Len is the number of sessions.
func (p *Pool[S]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

// janitor closes sessions idle for longer than the timeout.
func (p *Pool[S]) janitor() {
	t := time.NewTicker(max(p.idle/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			p.mu.Lock()
			var victims []*entry[S]
			for e := p.lru.Back(); e != nil; {
				prev := e.Prev()
				en := e.Value.(*entry[S])
				if now.Sub(en.lastUsed) > p.idle {
					p.removeLocked(en)
					victims = append(victims, en)
				}
				e = prev
			}
			p.mu.Unlock()
			for _, v := range victims {
				close(v.release)
			}
		}
	}
}

// ScopeKey is the versioned scope of a user's thread: "v2:" and the JSON
// array [user, thread], as DeerFlow's later scope key. DeerFlow's legacy
// "<user>:<thread>" is ambiguous when an id contains ':' (user "a:b" in
// thread "c" and user "a" in thread "b:c" would share a process); the JSON
// form cannot collide.
func ScopeKey(user, thread string) string {
	b, _ := json.Marshal([]string{user, thread})
	return "v2:" + string(b)
}
