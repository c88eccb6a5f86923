// Package sessionpool keeps stdio MCP sessions alive per (server, scope),
// where the scope is one user's thread: a stateful server keeps its state for
// that thread, and two users never share a process. It is DeerFlow's
// MCPSessionPool: an LRU cap, an idle timeout, one owner goroutine per session
// that opens and closes it, and eviction that only ever removes the session
// that failed, never its replacement. On top of it, fairness: each user has a
// share of the pool, calls hold leases, and neither a leased session nor one
// the Pinned hook names (an active durable task) is closed for room or idleness.
// A session being closed keeps its place until its Close returns, so the
// limits bound the processes that exist, not only the sessions handed out.
package sessionpool

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// Defaults (DeerFlow's MAX_SESSIONS; an idle session is closed after the
// timeout). DefaultMaxPerUser keeps one user from filling the pool: sixteen
// sessions are a handful of threads with two or three stdio servers each.
const (
	DefaultMaxSessions = 256
	DefaultMaxPerUser  = 16
	DefaultIdleTimeout = 30 * time.Minute
)

// ErrClosed is returned after Close.
var ErrClosed = errors.New("session pool closed")

// ErrUserLimit is returned when the caller's user already has the maximum
// number of sessions and every one of them is busy (a call in flight) or
// pinned (an active durable task), so none can be closed for the new one.
var ErrUserLimit = errors.New("sessionpool: the user's session limit is reached and all of its sessions are in use")

// ErrFull is returned when the pool holds the maximum number of sessions and
// every one of them is busy or pinned.
var ErrFull = errors.New("sessionpool: the pool is full and all of its sessions are in use")

// Key names one session. Config identifies the server settings the session
// was started with, so a session started under an old configuration is never
// handed to a call made under a new one. User and Thread are the parts of
// Scope, which the per-user limit and the pinned hook need.
type Key struct {
	Server string
	Scope  string
	Config string
	User   string
	Thread string
}

// NewKey returns the key of server's session for user's thread.
func NewKey(server, user, thread, config string) Key {
	return Key{Server: server, Scope: ScopeKey(user, thread), Config: config, User: user, Thread: thread}
}

// Session is what the pool keeps: an upstream connection.
type Session interface {
	Close() error
}

// DialFunc opens a session. exited must be called if the session dies on its
// own (the pool then evicts it at once).
type DialFunc[S Session] func(ctx context.Context, exited func()) (S, error)

// Options bound a pool; zero values mean the defaults.
type Options struct {
	MaxSessions int
	// MaxPerUser caps one user's sessions across servers and threads.
	MaxPerUser  int
	IdleTimeout time.Duration
	// Pinned reports whether the session of (server, user, thread) holds
	// something that dies with it, such as an active durable task. A pinned
	// session is never closed for room or for idleness. It is called without
	// the pool's lock held; nil pins nothing.
	Pinned func(server, user, thread string) bool
	// OnEvent, when set, is told each session's start and end with its
	// reason, from the session's owner goroutine (several at once).
	OnEvent func(server string, ev Event)
}

// Event is a session's start or the reason it ended.
type Event string

// Session events.
const (
	EventStarted Event = "started"
	// EventEvicted: closed to make room for another session.
	EventEvicted Event = "evicted"
	// EventIdle: closed after the idle timeout.
	EventIdle Event = "idle"
	// EventCrashed: its process exited or its connection was lost.
	EventCrashed Event = "crashed"
	// EventClosed: retired with its thread, its server's settings or the
	// pool.
	EventClosed Event = "closed"
)

// Pool is safe for concurrent use.
type Pool[S Session] struct {
	max     int
	perUser int
	idle    time.Duration
	pinned  func(server, user, thread string) bool
	onEvent func(server string, ev Event)

	mu      sync.Mutex
	entries map[Key]*entry[S]
	users   map[string]int // sessions per user
	lru     *list.List     // of *entry, most recent at the front
	// closing counts, per user and in all, the sessions removed from
	// entries whose owner has not finished closing them: a stdio child
	// given its exit grace still holds memory, so it still holds its place.
	closing      map[string]int
	closingTotal int
	// freed is closed (and replaced) whenever a closing session is gone:
	// a Get waiting for room wakes on it.
	freed  chan struct{}
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

type entry[S Session] struct {
	key      Key
	elem     *list.Element
	ready    chan struct{} // closed once the owner has dialled (or failed)
	sess     S
	err      error
	release  chan struct{} // closed to tell the owner to close the session
	lastUsed time.Time
	leases   int // callers holding the session (waiting for it or calling)
	// retired is set by RetireThread on a session that was leased: the
	// last release closes it (unless pinned by then).
	retired bool
	// ended is why the session is closed, set with its removal before
	// release is closed.
	ended Event
	// gone is closed once the owner has closed the session (or its dial
	// failed): its place is free.
	gone chan struct{}
	// handedOn: the session was closed for room, and its place went to
	// the new session that waits for gone; it is not counted as closing.
	handedOn bool
}

// New returns a pool.
func New[S Session](opts Options) *Pool[S] {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	if opts.MaxPerUser <= 0 {
		opts.MaxPerUser = DefaultMaxPerUser
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	p := &Pool[S]{max: opts.MaxSessions, perUser: opts.MaxPerUser, idle: opts.IdleTimeout, pinned: opts.Pinned, onEvent: opts.OnEvent,
		entries: map[Key]*entry[S]{}, users: map[string]int{}, closing: map[string]int{}, freed: make(chan struct{}),
		lru: list.New(), stop: make(chan struct{})}
	p.wg.Go(p.janitor)
	return p
}

// Get leases the live session for key, joining a creation in flight or
// starting one (bounded by ctx, which only limits the wait: the session's own
// life is the owner goroutine's). The caller must call release when its call
// is over: a leased session is never closed for room or idleness.
//
// A new session needs room. When key's user is at its limit, the user's own
// least recently used session that is neither leased nor pinned is closed;
// when the pool is full, the least recently used such session of any user.
// A closed session's place is taken once its Close has returned (the child
// has exited or been killed), so Get waits for that, bounded by ctx; it
// waits the same way when the limit is held by sessions already closing.
// With no session to close and none closing the answer is ErrUserLimit or
// ErrFull.
func (p *Pool[S]) Get(ctx context.Context, key Key, dial DialFunc[S]) (sess S, release func(), err error) {
	var zero S
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return zero, nil, ErrClosed
		}
		if e, ok := p.entries[key]; ok {
			p.lru.MoveToFront(e.elem)
			return p.lease(ctx, e)
		}
		candidates, full := p.roomLocked(key.User)
		if full == nil {
			return p.startLocked(ctx, key, dial, nil)
		}
		freed, closing := p.freed, p.closing[key.User] > 0
		if full == ErrFull {
			closing = p.closingTotal > 0
		}
		p.mu.Unlock()
		if sess, release, err, done := p.evictFor(ctx, key, dial, candidates); done {
			return sess, release, err
		}
		if !closing {
			return zero, nil, full
		}
		select {
		case <-freed:
		case <-ctx.Done():
			return zero, nil, ctx.Err()
		}
	}
}

// startLocked adds key's session to the pool (p.mu held, and released
// here), its owner dialling once after is closed (nil: at once), and leases
// it.
func (p *Pool[S]) startLocked(ctx context.Context, key Key, dial DialFunc[S], after <-chan struct{}) (S, func(), error) {
	e := &entry[S]{key: key, ready: make(chan struct{}), release: make(chan struct{}), gone: make(chan struct{})}
	e.elem = p.lru.PushFront(e)
	p.entries[key] = e
	p.users[key.User]++
	p.wg.Go(func() { p.own(e, dial, after) })
	return p.lease(ctx, e)
}

// TryGet leases key's session if it is live now, without waiting or
// dialling; ok is false when there is none yet (or it failed, or the pool
// is closed), and the caller then uses Get. It spares a call that finds its
// session the deadline Get's wait needs.
func (p *Pool[S]) TryGet(key Key) (sess S, release func(), ok bool) {
	return p.tryLease(key, true)
}

// TryBorrow is TryGet for housekeeping (an unsubscribe sent for a departed
// session): the lease is no use of the session, so it leaves its idle clock
// and its place among the least recently used as they were, and a process
// nobody calls still closes when it would have.
func (p *Pool[S]) TryBorrow(key Key) (sess S, release func(), ok bool) {
	return p.tryLease(key, false)
}

func (p *Pool[S]) tryLease(key Key, use bool) (sess S, release func(), ok bool) {
	p.mu.Lock()
	e, found := p.entries[key]
	if p.closed || !found || !p.liveLocked(e) {
		p.mu.Unlock()
		return sess, nil, false
	}
	if use {
		p.lru.MoveToFront(e.elem)
	}
	sess, release, err := p.leaseFor(context.Background(), e, use) // ready: no wait
	return sess, release, err == nil
}

// liveLocked reports whether e has been dialled successfully.
func (p *Pool[S]) liveLocked(e *entry[S]) bool {
	select {
	case <-e.ready:
		return e.err == nil
	default:
		return false
	}
}

// lease takes a lease on e (p.mu held, and released here) and waits for it.
func (p *Pool[S]) lease(ctx context.Context, e *entry[S]) (S, func(), error) {
	return p.leaseFor(ctx, e, true)
}

// leaseFor is lease; a lease that is no use of the session (use false)
// leaves its idle clock as it was.
func (p *Pool[S]) leaseFor(ctx context.Context, e *entry[S], use bool) (S, func(), error) {
	var zero S
	e.leases++
	if use {
		e.lastUsed = time.Now()
	}
	p.mu.Unlock()
	var once sync.Once
	release := func() {
		once.Do(func() {
			p.mu.Lock()
			e.leases--
			if use {
				e.lastUsed = time.Now()
			}
			retire := e.retired && e.leases == 0
			p.mu.Unlock()
			if retire {
				p.retire(e)
			}
		})
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		release()
		return zero, nil, ctx.Err()
	}
	if e.err != nil {
		release()
		return zero, nil, e.err
	}
	return e.sess, release, nil
}

// roomLocked reports whether a new session of user fits (nil) or which limit
// it hits, with the sessions that could make room, least recently used first.
// Sessions still closing count against both limits.
func (p *Pool[S]) roomLocked(user string) ([]*entry[S], error) {
	limit := p.limitLocked(user)
	if limit == nil {
		return nil, nil
	}
	var out []*entry[S]
	for el := p.lru.Back(); el != nil; el = el.Prev() {
		e := el.Value.(*entry[S])
		if (limit == ErrFull || e.key.User == user) && p.idleLocked(e) {
			out = append(out, e)
		}
	}
	return out, limit
}

// limitLocked is the limit a new session of user hits (ErrUserLimit or
// ErrFull), or nil when it fits.
func (p *Pool[S]) limitLocked(user string) error {
	switch {
	case p.users[user]+p.closing[user] >= p.perUser:
		return ErrUserLimit
	case len(p.entries)+p.closingTotal >= p.max:
		return ErrFull
	}
	return nil
}

// idleLocked reports whether e is a live session nobody holds.
func (p *Pool[S]) idleLocked(e *entry[S]) bool {
	return e.leases == 0 && p.liveLocked(e) // (not while still dialling)
}

// isPinned asks the hook about e (without p.mu held).
func (p *Pool[S]) isPinned(e *entry[S]) bool {
	return p.pinned != nil && p.pinned(e.key.Server, e.key.User, e.key.Thread)
}

// evictFor closes the first candidate that is not pinned and still idle,
// and in the same hold of the lock hands its place to key's new session,
// which is dialled once the candidate is gone: no other Get can take the
// place meanwhile, and the two never run at once. done is false when no
// candidate could be closed. A Get that finds room by then, or key's
// session made by another, closes nothing.
func (p *Pool[S]) evictFor(ctx context.Context, key Key, dial DialFunc[S], candidates []*entry[S]) (sess S, release func(), err error, done bool) {
	for _, e := range candidates {
		if p.isPinned(e) {
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return sess, nil, ErrClosed, true
		}
		if cur, ok := p.entries[key]; ok {
			p.lru.MoveToFront(cur.elem)
			sess, release, err = p.lease(ctx, cur)
			return sess, release, err, true
		}
		limit := p.limitLocked(key.User)
		if limit == nil {
			sess, release, err = p.startLocked(ctx, key, dial, nil)
			return sess, release, err, true
		}
		// (At the user's limit only her own session makes room for her,
		// whatever the limit was when the candidates were chosen.)
		if p.entries[e.key] != e || !p.idleLocked(e) || (limit == ErrUserLimit && e.key.User != key.User) {
			p.mu.Unlock()
			continue
		}
		p.removeLocked(e)
		e.ended = EventEvicted
		e.handedOn = true
		p.uncountClosingLocked(e)
		close(e.release)
		sess, release, err = p.startLocked(ctx, key, dial, e.gone)
		return sess, release, err, true
	}
	return sess, nil, nil, false
}

// own is the session's owner goroutine: it opens the session, publishes it,
// and closes it when released.
func (p *Pool[S]) own(e *entry[S], dial DialFunc[S], after <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-e.release: // released while dialling: abandon the dial
			cancel()
		case <-e.ready:
		}
	}()
	var sess S
	var err error
	if after != nil {
		select {
		case <-after: // the session whose place this is has closed
		case <-ctx.Done(): // released before it could start
		}
	}
	if err = ctx.Err(); err == nil {
		sess, err = dial(ctx, func() { p.Evict(e.key, e) })
	}
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
		p.gone(e)
		return
	}
	p.event(e.key.Server, EventStarted)
	<-e.release
	_ = sess.Close()
	p.gone(e)
	ended := e.ended
	if ended == "" {
		ended = EventClosed
	}
	p.event(e.key.Server, ended)
}

// gone gives back the place of e, removed from the pool and now closed (or
// never opened), and wakes the Gets waiting for room.
func (p *Pool[S]) gone(e *entry[S]) {
	p.mu.Lock()
	if !e.handedOn {
		p.uncountClosingLocked(e)
	}
	close(p.freed)
	p.freed = make(chan struct{})
	p.mu.Unlock()
	close(e.gone)
}

func (p *Pool[S]) event(server string, ev Event) {
	if p.onEvent != nil {
		p.onEvent(server, ev)
	}
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
	e.ended = EventCrashed
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

// uncountClosingLocked takes e off the closing counts.
func (p *Pool[S]) uncountClosingLocked(e *entry[S]) {
	if p.closing[e.key.User]--; p.closing[e.key.User] <= 0 {
		delete(p.closing, e.key.User)
	}
	p.closingTotal--
}

// removeLocked takes e out of the pool; its place stays held (closing) until
// its owner has closed it (gone).
func (p *Pool[S]) removeLocked(e *entry[S]) {
	delete(p.entries, e.key)
	p.lru.Remove(e.elem)
	if p.users[e.key.User]--; p.users[e.key.User] <= 0 {
		delete(p.users, e.key.User)
	}
	p.closing[e.key.User]++
	p.closingTotal++
}

// RetireThread closes the sessions of thread, for every user and server,
// once they are not leased, except those the Pinned hook holds: the thread
// is over (an MCP session that ended named it), so its processes would only
// idle until the timeout. A leased session is closed at its last release.
func (p *Pool[S]) RetireThread(thread string) {
	p.mu.Lock()
	var idle []*entry[S]
	for k, e := range p.entries {
		if k.Thread != thread {
			continue
		}
		if e.leases > 0 {
			e.retired = true
		} else {
			idle = append(idle, e)
		}
	}
	p.mu.Unlock()
	for _, e := range idle {
		p.retire(e)
	}
}

// retire closes e unless it is pinned, gone, or leased again meanwhile.
func (p *Pool[S]) retire(e *entry[S]) {
	if p.isPinned(e) {
		return
	}
	p.mu.Lock()
	ok := p.entries[e.key] == e && e.leases == 0
	if ok {
		p.removeLocked(e)
	}
	p.mu.Unlock()
	if ok {
		close(e.release)
	}
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

// janitor closes sessions idle for longer than the timeout, except leased
// and pinned ones.
func (p *Pool[S]) janitor() {
	t := time.NewTicker(max(p.idle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			p.closeIdle(now)
		}
	}
}

func (p *Pool[S]) closeIdle(now time.Time) {
	type expired struct {
		e        *entry[S]
		lastUsed time.Time
	}
	var due []expired
	p.mu.Lock()
	for el := p.lru.Back(); el != nil; el = el.Prev() {
		e := el.Value.(*entry[S])
		if now.Sub(e.lastUsed) > p.idle && p.idleLocked(e) {
			due = append(due, expired{e, e.lastUsed})
		}
	}
	p.mu.Unlock()
	for _, x := range due {
		if p.isPinned(x.e) {
			continue
		}
		p.mu.Lock()
		ok := p.entries[x.e.key] == x.e && p.idleLocked(x.e) && x.e.lastUsed.Equal(x.lastUsed)
		if ok {
			p.removeLocked(x.e)
			x.e.ended = EventIdle
		}
		p.mu.Unlock()
		if ok {
			close(x.e.release)
		}
	}
}

// ScopeKey is the versioned scope of a user's thread: "v2:" and the JSON
// array [user, thread], as DeerFlow's later scope key. DeerFlow's legacy
// "<user>:<thread>" is ambiguous when an id contains ':' (user "a:b" in
// thread "c" and user "a" in thread "b:c" would share a process); the JSON
// form cannot collide.
func ScopeKey(user, thread string) string {
	if plainJSON(user) && plainJSON(thread) { // every call builds one: no encoder for ordinary ids
		return `v2:["` + user + `","` + thread + `"]`
	}
	b, _ := json.Marshal([]string{user, thread})
	return "v2:" + string(b)
}

// plainJSON reports whether json.Marshal writes s between quotes unchanged:
// printable ASCII without a quote, backslash or HTML character.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
