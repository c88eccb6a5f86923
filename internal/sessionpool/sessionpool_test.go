package sessionpool_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/antler-mcp/antler/internal/eventually"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/sessionpool"
)

// fakeSession is a mock session (the pool's tests need no real process; the
// toolcache tests run real stdio servers through the pool).
type fakeSession struct {
	id     int
	closed atomic.Bool
	exited func()
}

func (s *fakeSession) Close() error {
	s.closed.Store(true)
	return nil
}

type dialer struct {
	n     atomic.Int64
	delay time.Duration
	fail  bool
}

func (d *dialer) dial(ctx context.Context, exited func()) (*fakeSession, error) {
	n := d.n.Add(1)
	select {
	case <-time.After(d.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if d.fail {
		return nil, errors.New("dial failed")
	}
	return &fakeSession{id: int(n), exited: exited}, nil
}

func key(scope string) sessionpool.Key { return sessionpool.Key{Server: "s", Scope: scope} }

// get leases a session and gives the lease back at once: the call is over.
func get(p *sessionpool.Pool[*fakeSession], k sessionpool.Key, dial sessionpool.DialFunc[*fakeSession]) (*fakeSession, error) {
	s, release, err := p.Get(context.Background(), k, dial)
	if err == nil {
		release()
	}
	return s, err
}

func TestConcurrentGetsShareOneDial(t *testing.T) {
	p := sessionpool.New[*fakeSession](sessionpool.Options{})
	defer p.Close()
	d := &dialer{delay: 50 * time.Millisecond}
	var wg sync.WaitGroup
	got := make([]*fakeSession, 20)
	for i := range got {
		wg.Go(func() {
			s, err := get(p, key("a:t"), d.dial)
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		})
	}
	wg.Wait()
	if d.n.Load() != 1 {
		t.Errorf("%d dials, want 1", d.n.Load())
	}
	for _, s := range got {
		if s != got[0] {
			t.Fatal("callers got different sessions for one key")
		}
	}
}

func TestLRUCapClosesTheOldest(t *testing.T) {
	p := sessionpool.New[*fakeSession](sessionpool.Options{MaxSessions: 2})
	defer p.Close()
	d := &dialer{}
	a, _ := get(p, key("a"), d.dial)
	b, _ := get(p, key("b"), d.dial)
	if _, err := get(p, key("a"), d.dial); err != nil { // a is now the most recent
		t.Fatal(err)
	}
	if _, err := get(p, key("c"), d.dial); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the evicted session b to close", b.closed.Load)
	if a.closed.Load() {
		t.Error("the recently used session was closed")
	}
	if p.Len() != 2 {
		t.Errorf("len %d, want 2", p.Len())
	}
}

func TestLateEvictionNeverRemovesTheReplacement(t *testing.T) {
	p := sessionpool.New[*fakeSession](sessionpool.Options{})
	defer p.Close()
	d := &dialer{}
	old, _ := get(p, key("a"), d.dial)
	p.Evict(key("a"), old) // the old session failed
	fresh, _ := get(p, key("a"), d.dial)
	if fresh == old {
		t.Fatal("the evicted session was handed out again")
	}
	var wg sync.WaitGroup
	for range 50 { // late errors from calls on the old session, racing new calls
		wg.Go(func() { p.Evict(key("a"), old) })
		wg.Go(func() { _, _ = get(p, key("a"), d.dial) })
	}
	wg.Wait()
	if s, _ := get(p, key("a"), d.dial); s != fresh || fresh.closed.Load() {
		t.Error("a late eviction of the old session removed its replacement")
	}
	eventually.True(t, "the old session to close", old.closed.Load)
}

func TestExitedSessionIsEvicted(t *testing.T) {
	p := sessionpool.New[*fakeSession](sessionpool.Options{})
	defer p.Close()
	d := &dialer{}
	s, _ := get(p, key("a"), d.dial)
	s.exited()
	eventually.True(t, "the exited session to be evicted and closed", func() bool { return p.Len() == 0 && s.closed.Load() })
	if again, _ := get(p, key("a"), d.dial); again == s {
		t.Error("an exited session was reused")
	}
}

func TestFailedDialIsNotCached(t *testing.T) {
	p := sessionpool.New[*fakeSession](sessionpool.Options{})
	defer p.Close()
	d := &dialer{fail: true}
	if _, err := get(p, key("a"), d.dial); err == nil {
		t.Fatal("want the dial error")
	}
	d.fail = false
	if _, err := get(p, key("a"), d.dial); err != nil {
		t.Fatalf("the next Get retried nothing: %v", err)
	}
}

func TestIdleSessionsAreClosed(t *testing.T) {
	p := sessionpool.New[*fakeSession](sessionpool.Options{IdleTimeout: 100 * time.Millisecond})
	defer p.Close()
	s, _ := get(p, key("a"), (&dialer{}).dial)
	eventually.True(t, "the idle session to be closed and evicted", func() bool { return s.closed.Load() && p.Len() == 0 })
}

func TestCloseServerAndCounts(t *testing.T) {
	p := sessionpool.New[*fakeSession](sessionpool.Options{})
	d := &dialer{}
	a, _ := get(p, sessionpool.Key{Server: "x", Scope: "1"}, d.dial)
	_, _ = get(p, sessionpool.Key{Server: "x", Scope: "2"}, d.dial)
	b, _ := get(p, sessionpool.Key{Server: "y", Scope: "1"}, d.dial)
	if c := p.Counts(); c["x"] != 2 || c["y"] != 1 {
		t.Errorf("counts %v", c)
	}
	p.CloseServer("x")
	eventually.True(t, "session a to close", a.closed.Load)
	if b.closed.Load() || p.Len() != 1 {
		t.Error("CloseServer touched another server")
	}
	p.Close()
	if !b.closed.Load() {
		t.Error("Close left a session open")
	}
	if _, err := get(p, key("z"), d.dial); !errors.Is(err, sessionpool.ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
}

func TestScopeKeysDoNotCollide(t *testing.T) {
	if sessionpool.ScopeKey("a:b", "c") == sessionpool.ScopeKey("a", "b:c") {
		t.Error("two different user threads share a scope key")
	}
	if got := sessionpool.ScopeKey("alice", "t1"); got != `v2:["alice","t1"]` {
		t.Errorf("ScopeKey = %s", got)
	}
}

// TestScopeKeyIsJSON: the key is "v2:" and the JSON array json.Marshal
// writes, whatever the ids hold.
func TestScopeKeyIsJSON(t *testing.T) {
	for _, ids := range [][2]string{{"alice", "t1"}, {"", ""}, {"a:b", "c"}, {`q"uote`, `back\slash`}, {"<tag>", "a&b"},
		{"tab\there", "nl\n"}, {"é", "\u2028"}, {"bad\xff", "del\x7f"}} {
		b, err := json.Marshal([]string{ids[0], ids[1]})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := sessionpool.ScopeKey(ids[0], ids[1]), "v2:"+string(b); got != want {
			t.Errorf("ScopeKey(%q, %q) = %s, want %s", ids[0], ids[1], got, want)
		}
	}
}

// TestTryGet: TryGet leases only a session that is live now, and it is the
// one Get gives.
func TestTryGet(t *testing.T) {
	d := &dialer{}
	p := sessionpool.New[*fakeSession](sessionpool.Options{})
	if _, _, ok := p.TryGet(key("a")); ok {
		t.Fatal("TryGet on an empty pool leased a session")
	}
	s, err := get(p, key("a"), d.dial)
	if err != nil {
		t.Fatal(err)
	}
	got, release, ok := p.TryGet(key("a"))
	if !ok || got != s {
		t.Fatalf("TryGet = %v, %v; want the live session %v", got, ok, s)
	}
	release()
	if _, _, ok := p.TryGet(key("b")); ok {
		t.Fatal("TryGet leased a session for a key never dialled")
	}
	failing := &dialer{fail: true}
	if _, err := get(p, key("c"), failing.dial); err == nil {
		t.Fatal("failing dial succeeded")
	}
	if _, _, ok := p.TryGet(key("c")); ok {
		t.Fatal("TryGet leased a failed session")
	}
	p.Close()
	if _, _, ok := p.TryGet(key("a")); ok {
		t.Fatal("TryGet leased a session from a closed pool")
	}
	if d.n.Load() != 1 {
		t.Fatalf("dialled %d times, want 1", d.n.Load())
	}
}

// TestEvents: each session's start and the reason it ended reach OnEvent
// (the metrics count them by server).
func TestEvents(t *testing.T) {
	events := make(chan string, 16)
	p := sessionpool.New[*fakeSession](sessionpool.Options{MaxSessions: 2, IdleTimeout: time.Hour,
		OnEvent: func(server string, ev sessionpool.Event) { events <- server + " " + string(ev) }})
	next := func() string {
		t.Helper()
		select {
		case e := <-events:
			return e
		case <-time.After(5 * time.Second):
			t.Fatal("no event within 5s")
			return ""
		}
	}
	d := &dialer{}
	a, _ := get(p, sessionpool.Key{Server: "x", Scope: "a"}, d.dial)
	if e := next(); e != "x started" {
		t.Fatalf("first event %q", e)
	}
	_, _ = get(p, sessionpool.Key{Server: "y", Scope: "b"}, d.dial)
	next()
	_, _ = get(p, sessionpool.Key{Server: "y", Scope: "c"}, d.dial) // no room: a, the oldest, goes
	if got := map[string]bool{next(): true, next(): true}; !got["x evicted"] || !got["y started"] {
		t.Errorf("events %v, want x evicted and y started (in either order)", got)
	}
	if !a.closed.Load() {
		t.Error("the evicted session is open")
	}
	c, _ := get(p, sessionpool.Key{Server: "y", Scope: "c"}, d.dial)
	c.exited()
	if e := next(); e != "y crashed" {
		t.Errorf("exited session: %q, want y crashed", e)
	}
	p.Close()
	if e := next(); e != "y closed" {
		t.Errorf("closed pool: %q, want y closed", e)
	}
}

// TestTryBorrowIsNoUse: a session borrowed for housekeeping keeps its
// place among the least recently used: at the cap, it is the one closed
// for room, as if it had not been borrowed; a session taken with TryGet
// moves ahead, as a call's does.
func TestTryBorrowIsNoUse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lease   func(*sessionpool.Pool[*fakeSession], sessionpool.Key) (*fakeSession, func(), bool)
		evicted string
	}{
		{"borrow", (*sessionpool.Pool[*fakeSession]).TryBorrow, "a"},
		{"get", (*sessionpool.Pool[*fakeSession]).TryGet, "b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := sessionpool.New[*fakeSession](sessionpool.Options{MaxSessions: 2})
			defer p.Close()
			d := &dialer{}
			a, _ := get(p, key("a"), d.dial)
			b, _ := get(p, key("b"), d.dial)
			if _, release, ok := tc.lease(p, key("a")); !ok {
				t.Fatal("the live session was not leased")
			} else {
				release()
			}
			if _, err := get(p, key("c"), d.dial); err != nil {
				t.Fatal(err)
			}
			closed, kept := a, b
			if tc.evicted == "b" {
				closed, kept = b, a
			}
			eventually.True(t, "the least recently used session "+tc.evicted+" to close", closed.closed.Load)
			if kept.closed.Load() {
				t.Error("the more recently used session was closed")
			}
		})
	}
}
