package sessionpool_test

import (
	"context"
	"errors"
	"github.com/antler-mcp/antler/internal/eventually"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/sessionpool"
)

// pins is a Pinned hook over a set of "user/thread" names that counts how
// often it was asked about each.
type pins struct {
	mu    sync.Mutex
	set   map[string]bool
	asked map[string]int
}

func newPins(names ...string) *pins {
	p := &pins{set: map[string]bool{}, asked: map[string]int{}}
	for _, n := range names {
		p.set[n] = true
	}
	return p
}

func (p *pins) pinned(_, user, thread string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked[user+"/"+thread]++
	return p.set[user+"/"+thread]
}

func (p *pins) unpin(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.set, name)
}

func (p *pins) timesAsked(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked[name]
}

type open struct {
	user, thread string
	hold         bool // keep the lease: a call in flight
}

func (o open) name() string { return o.user + "/" + o.thread }

func TestRoomIsMadeOnlyFromIdleUnpinnedSessions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		max, perUser int
		pinned       []string
		opened       []open
		next         open
		wantErr      error
		wantClosed   []string
	}{
		{name: "a user at its limit loses its own least recently used session", max: 100, perUser: 2,
			opened: []open{{"alice", "1", false}, {"bob", "1", false}, {"alice", "2", false}},
			next:   open{"alice", "3", false}, wantClosed: []string{"alice/1"}},
		{name: "a session with a call in flight is skipped", max: 100, perUser: 2,
			opened: []open{{"alice", "1", true}, {"alice", "2", false}},
			next:   open{"alice", "3", false}, wantClosed: []string{"alice/2"}},
		{name: "a pinned session is skipped", max: 100, perUser: 2, pinned: []string{"alice/1"},
			opened: []open{{"alice", "1", false}, {"alice", "2", false}},
			next:   open{"alice", "3", false}, wantClosed: []string{"alice/2"}},
		{name: "a user whose sessions are all busy is refused, never another user's", max: 100, perUser: 2, pinned: []string{"alice/2"},
			opened: []open{{"bob", "1", false}, {"alice", "1", true}, {"alice", "2", false}},
			next:   open{"alice", "3", false}, wantErr: sessionpool.ErrUserLimit},
		{name: "a full pool closes the least recently used idle session of any user", max: 3, perUser: 3,
			opened: []open{{"bob", "1", false}, {"alice", "1", false}, {"alice", "2", false}},
			next:   open{"carol", "1", false}, wantClosed: []string{"bob/1"}},
		{name: "a full pool of busy sessions refuses", max: 2, perUser: 2, pinned: []string{"bob/1"},
			opened: []open{{"bob", "1", false}, {"alice", "1", true}},
			next:   open{"carol", "1", false}, wantErr: sessionpool.ErrFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := sessionpool.New[*fakeSession](sessionpool.Options{MaxSessions: tt.max, MaxPerUser: tt.perUser, Pinned: newPins(tt.pinned...).pinned})
			defer p.Close()
			d := &dialer{}
			sessions := map[string]*fakeSession{}
			for _, o := range tt.opened {
				s, release, err := p.Get(context.Background(), sessionpool.NewKey("s", o.user, o.thread, ""), d.dial)
				if err != nil {
					t.Fatalf("open %s: %v", o.name(), err)
				}
				if o.hold {
					defer release()
				} else {
					release()
				}
				sessions[o.name()] = s
			}
			_, release, err := p.Get(context.Background(), sessionpool.NewKey("s", tt.next.user, tt.next.thread, ""), d.dial)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Get %s: %v, want %v", tt.next.name(), err, tt.wantErr)
			}
			want := len(tt.opened) - len(tt.wantClosed)
			if err == nil {
				release()
				want++
			}
			for _, name := range tt.wantClosed {
				eventually.True(t, "session "+name+" to close", sessions[name].closed.Load)
			}
			if p.Len() != want {
				t.Errorf("%d sessions, want %d (closed exactly %v)", p.Len(), want, tt.wantClosed)
			}
		})
	}
}

// TestFloodingUserCannotTouchAnotherUsersSessions is the attack: one user
// opens a session per thread for 300 threads while another user's call is
// in flight and his durable task is active.
func TestFloodingUserCannotTouchAnotherUsersSessions(t *testing.T) {
	t.Parallel()
	pinned := newPins("bob/task")
	p := sessionpool.New[*fakeSession](sessionpool.Options{MaxSessions: 8, MaxPerUser: 4, Pinned: pinned.pinned})
	defer p.Close()
	d := &dialer{}
	call, releaseCall, err := p.Get(context.Background(), sessionpool.NewKey("s", "bob", "call", ""), d.dial)
	if err != nil {
		t.Fatal(err)
	}
	task, err := get(p, sessionpool.NewKey("s", "bob", "task", ""), d.dial)
	if err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			_, err := get(p, sessionpool.NewKey("s", "mallory", strconv.Itoa(i), ""), d.dial)
			switch {
			case errors.Is(err, sessionpool.ErrUserLimit):
				refused.Add(1)
			case err != nil:
				t.Errorf("flood call: %v", err)
			}
		})
	}
	wg.Wait()
	if call.closed.Load() || task.closed.Load() {
		t.Fatalf("the flood closed bob's sessions: call closed %v, task closed %v", call.closed.Load(), task.closed.Load())
	}
	if c := p.Len(); c > 6 {
		t.Errorf("%d sessions: mallory holds more than her 4", c)
	}
	releaseCall()
	if s, _ := get(p, sessionpool.NewKey("s", "bob", "call", ""), d.dial); s != call {
		t.Error("bob's session was replaced")
	}
	t.Logf("%d of 300 flood calls refused at the limit", refused.Load())
}

func TestIdleTimeoutSparesLeasedAndPinnedSessions(t *testing.T) {
	t.Parallel()
	pinned := newPins("alice/task")
	p := sessionpool.New[*fakeSession](sessionpool.Options{IdleTimeout: 40 * time.Millisecond, Pinned: pinned.pinned})
	defer p.Close()
	d := &dialer{}
	idle, _ := get(p, sessionpool.NewKey("s", "alice", "idle", ""), d.dial)
	task, _ := get(p, sessionpool.NewKey("s", "alice", "task", ""), d.dial)
	busy, release, err := p.Get(context.Background(), sessionpool.NewKey("s", "alice", "busy", ""), d.dial)
	if err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the idle session to close", idle.closed.Load)
	// Three janitor passes found the task's session expired and kept it; the
	// busy session was expired as long and was never even considered.
	eventually.True(t, "three janitor passes asking about the task's session", func() bool { return pinned.timesAsked("alice/task") >= 3 })
	if task.closed.Load() || busy.closed.Load() {
		t.Fatalf("idle timeout closed a pinned (%v) or leased (%v) session", task.closed.Load(), busy.closed.Load())
	}
	release()
	eventually.True(t, "the released session to close", busy.closed.Load)
	pinned.unpin("alice/task")
	eventually.True(t, "the unpinned session to close", task.closed.Load)
}

func TestLeaseOutlivesTheWaitOfAnotherCaller(t *testing.T) {
	t.Parallel()
	p := sessionpool.New[*fakeSession](sessionpool.Options{MaxPerUser: 1})
	defer p.Close()
	d := &dialer{}
	s, release, err := p.Get(context.Background(), sessionpool.NewKey("s", "alice", "1", ""), d.dial)
	if err != nil {
		t.Fatal(err)
	}
	release()
	release() // idempotent: a second release must not free someone else's lease
	_, hold, err := p.Get(context.Background(), sessionpool.NewKey("s", "alice", "1", ""), d.dial)
	if err != nil {
		t.Fatal(err)
	}
	defer hold()
	if _, err := get(p, sessionpool.NewKey("s", "alice", "2", ""), d.dial); !errors.Is(err, sessionpool.ErrUserLimit) {
		t.Errorf("second thread while the first is in a call: %v, want ErrUserLimit", err)
	}
	if s.closed.Load() {
		t.Error("the leased session was closed")
	}
}

// TestRetireThreadClosesTheThreadsSessions: an ended thread's sessions go at
// once for every user and server, a leased one at its release, a pinned one
// not at all; other threads' sessions stay.
func TestRetireThreadClosesTheThreadsSessions(t *testing.T) {
	t.Parallel()
	pinned := newPins("carol/mcp-1")
	p := sessionpool.New[*fakeSession](sessionpool.Options{Pinned: pinned.pinned})
	defer p.Close()
	d := &dialer{}
	gone := []*fakeSession{}
	for _, k := range []sessionpool.Key{
		sessionpool.NewKey("s", "alice", "mcp-1", ""),
		sessionpool.NewKey("t", "alice", "mcp-1", ""),
		sessionpool.NewKey("s", "bob", "mcp-1", ""),
	} {
		s, err := get(p, k, d.dial)
		if err != nil {
			t.Fatal(err)
		}
		gone = append(gone, s)
	}
	other, _ := get(p, sessionpool.NewKey("s", "alice", "mcp-2", ""), d.dial)
	task, _ := get(p, sessionpool.NewKey("s", "carol", "mcp-1", ""), d.dial)
	busy, release, err := p.Get(context.Background(), sessionpool.NewKey("s", "dave", "mcp-1", ""), d.dial)
	if err != nil {
		t.Fatal(err)
	}

	p.RetireThread("mcp-1")
	if n := p.Len(); n != 3 {
		t.Errorf("%d sessions after RetireThread, want 3 (other thread, pinned, leased)", n)
	}
	for _, s := range gone {
		eventually.True(t, "the retired thread's session to close", s.closed.Load)
	}
	release()
	eventually.True(t, "the released session to close", busy.closed.Load)
	if n := p.Len(); n != 2 {
		t.Errorf("%d sessions after the lease ended, want 2", n)
	}
	if other.closed.Load() || task.closed.Load() {
		t.Errorf("closed another thread's session (%v) or a pinned one (%v)", other.closed.Load(), task.closed.Load())
	}
	if s, _ := get(p, sessionpool.NewKey("s", "carol", "mcp-1", ""), d.dial); s != task {
		t.Error("the pinned session was replaced")
	}
}

// TestAClosingSessionKeepsItsPlace: a session being closed still counts
// until its Close has returned. One closed for room hands its place to the
// session it was closed for, which starts only once it is gone; one closed
// for any other reason (a retired thread) holds its place, and a caller who
// needs it waits, bounded by its ctx, while another user below every limit
// never waits.
func TestAClosingSessionKeepsItsPlace(t *testing.T) {
	t.Parallel()
	p := sessionpool.New[*gatedSession](sessionpool.Options{MaxSessions: 3, MaxPerUser: 2})
	defer p.Close()
	started := make(chan string, 16)
	open := make(chan struct{})
	close(open)
	get := func(ctx context.Context, user, thread string, let chan struct{}, hold bool) error {
		_, release, err := p.Get(ctx, sessionpool.NewKey("s", user, thread, ""), func(context.Context, func()) (*gatedSession, error) {
			return &gatedSession{name: user + "/" + thread, started: started, let: let}, nil
		})
		if err == nil && hold {
			t.Cleanup(release)
		} else if err == nil {
			release()
		}
		return err
	}
	letA1, letB1 := make(chan struct{}), make(chan struct{})
	if err := get(context.Background(), "alice", "1", letA1, false); err != nil {
		t.Fatal(err)
	}
	if err := get(context.Background(), "alice", "2", open, true); err != nil { // a call in flight
		t.Fatal(err)
	}
	// Thread 3 closes thread 1 for room and waits for it to be gone.
	got := make(chan error, 1)
	go func() { got <- get(context.Background(), "alice", "3", open, true) }()
	if name := <-started; name != "alice/1" {
		t.Fatalf("%s closed, want alice/1", name)
	}
	// Bob fits every limit; his session is then retired, and lingers.
	if err := get(context.Background(), "bob", "1", letB1, false); err != nil {
		t.Fatalf("bob, below every limit: %v", err)
	}
	p.RetireThread("1")
	if name := <-started; name != "bob/1" {
		t.Fatalf("%s closed, want bob/1", name)
	}
	// The pool is full (alice's 2 and bob's closing 1): carol waits for
	// bob's place, and stops waiting when she gives up.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := get(ctx, "carol", "1", open, false); !errors.Is(err, context.Canceled) {
		t.Errorf("carol, waiting for a place in a full pool, cancelled: %v, want context.Canceled", err)
	}
	carol := make(chan error, 1)
	go func() { carol <- get(context.Background(), "carol", "1", open, false) }()
	select {
	case err := <-got:
		t.Fatalf("thread 3 opened (%v) while thread 1 was still closing", err)
	default:
	}
	close(letB1) // bob's lingering child is gone
	if err := <-carol; err != nil {
		t.Errorf("carol, once bob's session had closed: %v", err)
	}
	close(letA1)
	if err := <-got; err != nil {
		t.Fatalf("thread 3 once thread 1 had closed: %v", err)
	}
	if n := p.Len(); n != 3 {
		t.Errorf("%d sessions, want alice's 2 and carol's 1", n)
	}
}
