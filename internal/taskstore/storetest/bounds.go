package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// of makes a new task belong to userID.
func of(userID string) func(*taskstore.NewTask) {
	return func(nt *taskstore.NewTask) { nt.UserID = userID }
}

func claimPerUser(t *testing.T, s *taskstore.Store, now time.Time, owner string, limit, perUser int) []string {
	t.Helper()
	tasks, err := s.ClaimDuePerUser(context.Background(), now, owner, lease, limit, perUser)
	if err != nil {
		t.Fatalf("ClaimDuePerUser: %v", err)
	}
	return ids(tasks)
}

// testClaimDueFairAcrossUsers gives user-a a backlog due before user-b's
// and user-c's only tasks: a claim still takes one task of each user per
// turn, a user's tasks in due order.
func testClaimDueFairAcrossUsers(t *testing.T, s *taskstore.Store) {
	for i := range 6 {
		create(t, s, newTask(fmt.Sprintf("a%d", i), of("user-a"), func(nt *taskstore.NewTask) {
			nt.NextPollAt = at(time.Duration(i) * time.Millisecond)
		}), at(0))
	}
	create(t, s, newTask("b0", of("user-b"), func(nt *taskstore.NewTask) { nt.NextPollAt = at(time.Second) }), at(0))
	create(t, s, newTask("c0", of("user-c"), func(nt *taskstore.NewTask) { nt.NextPollAt = at(2 * time.Second) }), at(0))
	create(t, s, newTask("c1", of("user-c"), func(nt *taskstore.NewTask) { nt.NextPollAt = at(time.Hour) }), at(0))

	now := at(5 * time.Second)
	if got, want := ids(claimDue(t, s, now, "owner", 4)), []string{"a0", "b0", "c0", "a1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("claim of 4 = %v, want %v (one per user per turn)", got, want)
	}
	// user-a now holds two live leases, so its next tasks rank behind
	// nobody's but its own.
	if got, want := ids(claimDue(t, s, now, "owner", 10)), []string{"a2", "a3", "a4", "a5"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("second claim = %v, want %v", got, want)
	}
}

// testClaimDueCountsLiveLeases claims one task at a time, as a worker pool
// whose workers free up one by one does: a user whose polls are in flight
// waits behind a user who has none, however early its backlog is due.
func testClaimDueCountsLiveLeases(t *testing.T, s *taskstore.Store) {
	for i := range 5 {
		create(t, s, newTask(fmt.Sprintf("a%d", i), of("user-a"), func(nt *taskstore.NewTask) {
			nt.NextPollAt = at(time.Duration(i) * time.Millisecond)
		}), at(0))
	}
	now := at(5 * time.Second)
	if got := ids(claimDue(t, s, now, "owner", 3)); !reflect.DeepEqual(got, []string{"a0", "a1", "a2"}) {
		t.Fatalf("first claim = %v", got)
	}
	create(t, s, newTask("b0", of("user-b"), func(nt *taskstore.NewTask) { nt.NextPollAt = at(4 * time.Second) }), at(0))
	if got := ids(claimDue(t, s, now, "owner", 1)); !reflect.DeepEqual(got, []string{"b0"}) {
		t.Fatalf("claim of one with user-a's polls in flight = %v, want [b0]", got)
	}
	if got := ids(claimDue(t, s, now, "owner", 1)); !reflect.DeepEqual(got, []string{"a3"}) {
		t.Fatalf("next claim of one = %v, want [a3]", got)
	}
	// An expired lease is no longer in flight, and its task is due again.
	later := now.Add(lease + time.Second)
	create(t, s, newTask("b1", of("user-b"), func(nt *taskstore.NewTask) { nt.NextPollAt = later }), at(0))
	if got, want := ids(claimDue(t, s, later, "owner", 3)), []string{"a0", "b0", "a1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("claim after the leases expired = %v, want %v", got, want)
	}
}

// testClaimDuePerUserBound checks that no user holds more than perUser live
// poll leases after a claim, while other users' tasks are still taken.
func testClaimDuePerUserBound(t *testing.T, s *taskstore.Store) {
	for i := range 4 {
		create(t, s, newTask(fmt.Sprintf("a%d", i), of("user-a")), at(0))
	}
	create(t, s, newTask("b0", of("user-b"), func(nt *taskstore.NewTask) { nt.NextPollAt = at(time.Second) }), at(0))
	now := at(5 * time.Second)
	if got, want := claimPerUser(t, s, now, "owner", 10, 2), []string{"a0", "b0", "a1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("claim with a per-user bound of 2 = %v, want %v", got, want)
	}
	if got := claimPerUser(t, s, now, "owner", 10, 2); len(got) != 0 {
		t.Fatalf("user-a at its bound: claim = %v, want none", got)
	}
	if got, want := claimPerUser(t, s, now, "owner", 10, 0), []string{"a2", "a3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("claim without a bound = %v, want %v", got, want)
	}
	if _, err := s.ClaimDuePerUser(context.Background(), now, "owner", lease, 1, -1); err == nil {
		t.Error("a negative per-user bound: want an error")
	}
}

func reserve(s *taskstore.Store, id, userID string, limit int, now time.Time) error {
	return s.ReserveTaskSlot(context.Background(), id, userID, limit, now, time.Minute)
}

func wantLimit(t *testing.T, err error, limit int) {
	t.Helper()
	var le *taskstore.ActiveTaskLimitError
	if !errors.As(err, &le) || le.Limit != limit {
		t.Fatalf("error = %v, want an ActiveTaskLimitError of %d", err, limit)
	}
}

// testTaskSlots checks what a user's active-task slots count: pollable tasks
// and live reservations, not terminal tasks, not other users' tasks, not
// released or expired reservations; and that Create turns a reservation into
// its task without taking a second slot.
func testTaskSlots(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	const limit = 3
	create(t, s, newTask("active-1"), at(0))
	create(t, s, newTask("done", func(nt *taskstore.NewTask) { nt.Status = "completed" }), at(0))
	create(t, s, newTask("other-user", of("user-2")), at(0))
	create(t, s, newTask("other-user-2", of("user-2")), at(0))
	create(t, s, newTask("other-user-3", of("user-2")), at(0))

	if err := reserve(s, "r1", user, limit, at(0)); err != nil {
		t.Fatalf("first reservation: %v", err)
	}
	create(t, s, newTask("r1"), at(0)) // consumes r1: still two slots taken
	if err := reserve(s, "r2", user, limit, at(0)); err != nil {
		t.Fatalf("third slot: %v", err)
	}
	wantLimit(t, reserve(s, "r3", user, limit, at(0)), limit)
	wantLimit(t, reserve(s, "x", "user-2", limit, at(0)), limit)
	if err := reserve(s, "y", "user-3", limit, at(0)); err != nil {
		t.Fatalf("another user's reservation: %v", err)
	}

	if err := s.ReleaseTaskSlot(ctx, "r2"); err != nil {
		t.Fatal(err)
	}
	if err := reserve(s, "r3", user, limit, at(0)); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	wantLimit(t, reserve(s, "r4", user, limit, at(0)), limit)
	// r3 (one minute) expires; a finished task frees its slot too.
	if err := reserve(s, "r4", user, limit, at(time.Minute+time.Millisecond)); err != nil {
		t.Fatalf("after the reservation expired: %v", err)
	}
	wantLimit(t, reserve(s, "r5", user, limit, at(2*time.Minute)), limit)
	for _, a := range claimDue(t, s, at(2*time.Minute), "owner", 10) {
		if a.ID == "active-1" && !apply(t, s, a.ID, "owner", a.LeaseToken, status("completed"), time.Time{}, at(2*time.Minute)) {
			t.Fatal("apply was fenced")
		}
	}
	if err := reserve(s, "r5", user, limit, at(2*time.Minute)); err != nil {
		t.Fatalf("after a task completed: %v", err)
	}

	for _, tt := range []struct {
		name, id, user string
		limit          int
		ttl            time.Duration
	}{
		{"limit 0", "z1", user, 0, time.Minute},
		{"no ttl", "z2", user, 1, 0},
		{"empty user", "z3", "", 1, time.Minute},
		{"empty id", "", user, 1, time.Minute},
	} {
		if err := s.ReserveTaskSlot(ctx, tt.id, tt.user, tt.limit, at(0), tt.ttl); err == nil {
			t.Errorf("%s: want an error", tt.name)
		}
	}
}

// testConcurrentTaskSlots races 16 reservations of one user for 5 free
// slots: exactly 5 win, the others get an ActiveTaskLimitError.
func testConcurrentTaskSlots(t *testing.T, s *taskstore.Store) {
	const limit, racers = 6, 16
	create(t, s, newTask("active"), at(0))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		won     int
		refused int
		start   = make(chan struct{})
	)
	for i := range racers {
		wg.Go(func() {
			<-start
			err := reserve(s, fmt.Sprintf("racer-%d", i), user, limit, at(0))
			var le *taskstore.ActiveTaskLimitError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.As(err, &le):
				refused++
			default:
				t.Errorf("racer %d: %v", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	if won != limit-1 || refused != racers-limit+1 {
		t.Errorf("%d reservations won and %d were refused, want %d and %d", won, refused, limit-1, racers-limit+1)
	}
}

// testCreateAfterReservationExpired: a submit that outlived its reservation
// (another submit took the freed slot meanwhile) is refused at Create when
// the user is at the cap, and leaves no row; below the cap, or without a
// cap, a Create with no reservation still works.
func testCreateAfterReservationExpired(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	const limit = 2
	capped := func(nt *taskstore.NewTask) { nt.ActiveLimit = limit }
	create(t, s, newTask("active"), at(0))
	if err := reserve(s, "slow", user, limit, at(0)); err != nil {
		t.Fatal(err)
	}
	later := at(2 * time.Minute) // the slow submit's reservation has expired
	if err := reserve(s, "fast", user, limit, later); err != nil {
		t.Fatalf("reservation after the slow one expired: %v", err)
	}
	create(t, s, newTask("fast", capped), later)

	_, err := s.Create(ctx, newTask("slow", capped), later)
	wantLimit(t, err, limit)
	if _, err := s.Get(ctx, "slow", user); !errors.Is(err, taskstore.ErrNotFound) {
		t.Errorf("the refused task was stored: %v", err)
	}
	create(t, s, newTask("other", of("user-2"), capped), later) // below the cap, no reservation
	create(t, s, newTask("finished", capped, func(nt *taskstore.NewTask) {
		nt.Status, nt.NextPollAt = "completed", time.Time{}
	}), later) // takes no slot
	create(t, s, newTask("uncapped"), later)
}

// testClaimExcept: the poll and cancel claims leave out the users named, and
// ReturnClaim gives an unused claim back as it was (claimable, its attempt
// uncounted), once.
func testClaimExcept(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	for _, nt := range []taskstore.NewTask{newTask("a1"), newTask("a2"), newTask("b1", of("user-2")), newTask("c1", of("user-3"))} {
		create(t, s, nt, at(0))
	}
	ids := func(tasks []taskstore.Task, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, task := range tasks {
			out = append(out, task.ID)
		}
		slices.Sort(out)
		return out
	}
	got, err := s.ClaimDueExcept(ctx, at(0), "owner", lease, 10, 0, []string{user, "user-3"})
	if ids := ids(got, err); !slices.Equal(ids, []string{"b1"}) {
		t.Fatalf("claimed %v leaving out user-1 and user-3, want [b1]", ids)
	}
	for i, want := range []bool{true, false} {
		if ok, err := s.ReturnClaim(ctx, taskstore.Lease{ID: "b1", Owner: "owner", Token: got[0].LeaseToken}, false); err != nil || ok != want {
			t.Fatalf("return %d: %v, %v; want the first to return and the second to be fenced", i+1, ok, err)
		}
	}
	back, err := s.Get(ctx, "b1", "user-2")
	if err != nil || back.LeaseToken != "" || back.PollAttemptCount != 0 {
		t.Fatalf("returned claim: lease %q, %d poll attempts (%v); want none", back.LeaseToken, back.PollAttemptCount, err)
	}
	if ids := ids(s.ClaimDueExcept(ctx, at(0), "owner", lease, 10, 0, nil)); !slices.Equal(ids, []string{"a1", "a2", "b1", "c1"}) {
		t.Fatalf("claimed %v leaving out no one, want every task", ids)
	}

	if _, err := s.RequestCancel(ctx, "b1", task.Scope{User: "user-2", Thread: thread}, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RequestCancel(ctx, "a1", task.Scope{User: user, Thread: thread}, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	cancels, err := s.ClaimCancelRequestsExcept(ctx, at(time.Second), "owner", lease, 10, []string{"user-2"})
	if ids := ids(cancels, err); !slices.Equal(ids, []string{"a1"}) {
		t.Fatalf("cancels claimed %v leaving out user-2, want [a1]", ids)
	}
	if ok, err := s.ReturnClaim(ctx, taskstore.Lease{ID: "a1", Owner: "owner", Token: cancels[0].LeaseToken}, true); !ok || err != nil {
		t.Fatalf("return of the cancel claim: %v, %v", ok, err)
	}
	if back, err := s.Get(ctx, "a1", user); err != nil || back.LeaseToken != "" || back.CancelAttemptCount != 0 {
		t.Fatalf("returned cancel claim: lease %q, %d cancel attempts (%v); want none", back.LeaseToken, back.CancelAttemptCount, err)
	}
}
