package sessionpool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/antler-mcp/antler/internal/sessionpool"
)

// gatedSession is a session whose Close tells started its name and then
// returns only once let is closed: a child given its exit grace.
type gatedSession struct {
	name    string
	started chan<- string
	let     chan struct{}
}

func (s *gatedSession) Close() error {
	s.started <- s.name
	<-s.let
	return nil
}

// TestOnePlaceFreedCostsOneSession: the pool is full of a victim's idle
// sessions and two new threads of bob need room. Each evicts one of the
// victim's sessions (whose Close lingers) and waits for its place: two
// sessions for two places. When the first evicted session is gone, the Get
// that closed it takes its place, and the other goes on waiting for its own
// rather than closing a third of the victim's sessions: a burst of k new
// sessions in a full pool costs other users k idle sessions, not up to
// k*(k+1)/2.
func TestOnePlaceFreedCostsOneSession(t *testing.T) {
	t.Parallel()
	p := sessionpool.New[*gatedSession](sessionpool.Options{MaxSessions: 4, MaxPerUser: 4})
	started := make(chan string, 64)
	lets := map[string]chan struct{}{}
	for _, name := range []string{"v0", "v1", "v2", "v3"} {
		let := make(chan struct{})
		lets[name] = let
		_, release, err := p.Get(context.Background(), sessionpool.NewKey("s", "victim", name, ""),
			func(context.Context, func()) (*gatedSession, error) {
				return &gatedSession{name: name, started: started, let: let}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	open := make(chan struct{})
	close(open) // bob's own sessions close at once
	type result struct {
		name string
		err  error
	}
	results := make(chan result, 2)
	for _, thread := range []string{"b0", "b1"} {
		go func() {
			s, release, err := p.Get(context.Background(), sessionpool.NewKey("s", "bob", thread, ""),
				func(context.Context, func()) (*gatedSession, error) {
					return &gatedSession{name: thread, started: started, let: open}, nil
				})
			if err == nil {
				release()
				results <- result{s.name, nil}
				return
			}
			results <- result{thread, err}
		}()
	}
	// Each Get evicts one of the victim's sessions and waits for its place.
	first := <-started
	second := <-started
	// The first evicted session is gone: its Get gets its session, and the
	// other, whose own eviction is still closing, closes nothing more.
	close(lets[first])
	if r := <-results; r.err != nil {
		t.Fatalf("bob's %s, once the session closed for it was gone: %v", r.name, r.err)
	}
	close(lets[second])
	if r := <-results; r.err != nil {
		t.Errorf("bob's %s: %v", r.name, r.err)
	}
	if n := len(started); n != 0 {
		t.Errorf("%d more of the victim's sessions closed: two places cost more than two sessions", n)
	}
	if n := p.Len(); n != 4 {
		t.Errorf("%d sessions open once bob has both of his, want 4 (bob's 2 and the victim's other 2)", n)
	}
	for name, let := range lets {
		if name != first && name != second {
			close(let)
		}
	}
	p.Close()
}

// heldDone is a context whose first Done call reports itself on entered
// and then waits for let: its Get is held, as a descheduled goroutine
// would be, between the eviction it made and its wait for the place.
type heldDone struct {
	context.Context
	entered chan struct{}
	let     chan struct{}
	first   *bool
}

func (c heldDone) Done() <-chan struct{} {
	if !*c.first {
		*c.first = true
		close(c.entered)
		<-c.let
	}
	return c.Context.Done()
}

// TestAnEvictedPlaceGoesToItsEvictor: alice, at her limit of one, opens
// a second thread; her Get closes her idle first session, and its place is
// hers: bob, who had nothing to evict and waits only because a session is
// closing, cannot take it when that close ends (he is told the pool is
// full), and alice gets her session even when her goroutine runs last.
func TestAnEvictedPlaceGoesToItsEvictor(t *testing.T) {
	t.Parallel()
	ended := make(chan sessionpool.Event, 16)
	p := sessionpool.New[*gatedSession](sessionpool.Options{MaxSessions: 2, MaxPerUser: 1,
		OnEvent: func(_ string, ev sessionpool.Event) {
			if ev != sessionpool.EventStarted {
				ended <- ev
			}
		}})
	defer p.Close()
	started := make(chan string, 16)
	open := make(chan struct{})
	close(open)
	dial := func(name string, let chan struct{}) sessionpool.DialFunc[*gatedSession] {
		return func(context.Context, func()) (*gatedSession, error) {
			return &gatedSession{name: name, started: started, let: let}, nil
		}
	}
	// carol's session is busy (a call in flight) for the whole test.
	_, releaseCarol, err := p.Get(context.Background(), sessionpool.NewKey("s", "carol", "c0", ""), dial("c0", open))
	if err != nil {
		t.Fatal(err)
	}
	defer releaseCarol()
	// alice's first session is idle; its Close lingers until letA0.
	letA0 := make(chan struct{})
	_, release, err := p.Get(context.Background(), sessionpool.NewKey("s", "alice", "a0", ""), dial("a0", letA0))
	if err != nil {
		t.Fatal(err)
	}
	release()

	// alice opens thread a1: her Get evicts a0 and is held once it waits.
	first := false
	actx := heldDone{Context: context.Background(), entered: make(chan struct{}), let: make(chan struct{}), first: &first}
	aliceErr := make(chan error, 1)
	go func() {
		_, release, err := p.Get(actx, sessionpool.NewKey("s", "alice", "a1", ""), dial("a1", open))
		if err == nil {
			release()
		}
		aliceErr <- err
	}()
	<-actx.entered
	if name := <-started; name != "a0" {
		t.Fatalf("%s closed, want alice's a0", name)
	}
	// bob has nothing to evict (carol's session is busy, alice's new one
	// not yet started): he waits for a0 to close, then finds no room.
	bobErr := make(chan error, 1)
	go func() {
		_, release, err := p.Get(context.Background(), sessionpool.NewKey("s", "bob", "b0", ""), dial("b0", open))
		if err == nil {
			release()
		}
		bobErr <- err
	}()
	close(letA0)
	if ev := <-ended; ev != sessionpool.EventEvicted {
		t.Fatalf("a0 ended %s, want evicted", ev)
	}
	if err := <-bobErr; !errors.Is(err, sessionpool.ErrFull) {
		t.Errorf("bob, with the only free place alice's: %v, want ErrFull", err)
	}
	close(actx.let)
	if err := <-aliceErr; err != nil {
		t.Errorf("alice, whose own idle session was closed to make her room: %v", err)
	}
}
