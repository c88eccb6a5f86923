package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// The notification outbox (claims, retries, dead letters), on every engine.

func claimNotify(t *testing.T, s *taskstore.Store, now time.Time, owner string) []taskstore.Task {
	t.Helper()
	return claimNotifyN(t, s, now, owner, 10)
}

// claimNotifyN is ClaimNotifications of up to limit events.
func claimNotifyN(t *testing.T, s *taskstore.Store, now time.Time, owner string, limit int) []taskstore.Task {
	t.Helper()
	tasks, err := s.ClaimNotifications(context.Background(), now, owner, lease, limit)
	if err != nil {
		t.Fatalf("ClaimNotifications: %v", err)
	}
	return tasks
}

func claimNotifyOne(t *testing.T, s *taskstore.Store, now time.Time, owner, id string) taskstore.Task {
	t.Helper()
	tasks := claimNotify(t, s, now, owner)
	if got := ids(tasks); !reflect.DeepEqual(got, []string{id}) {
		t.Fatalf("ClaimNotifications(%v, %s) = %v, want [%s]", now, owner, got, id)
	}
	return tasks[0]
}

// completedTask creates a task that completed at at(0), so its event (version
// 1) is pending at at(0).
func completedTask(t *testing.T, s *taskstore.Store, id string) {
	t.Helper()
	create(t, s, newTask(id, func(nt *taskstore.NewTask) {
		nt.State = taskstore.State{Status: "completed", Result: json.RawMessage(`"ok"`)}
	}), at(0))
}

// check fails unless a fenced outbox write reported want.
func check(t *testing.T, what string, ok bool, err error, want bool) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if ok != want {
		t.Fatalf("%s applied = %v, want %v", what, ok, want)
	}
}

// pollTo moves a pollable task to snap through a claim and an applied poll.
func pollTo(t *testing.T, s *taskstore.Store, id string, now time.Time, snap taskstore.State, next time.Time) {
	t.Helper()
	claimed := claimOne(t, s, now, "poller", id)
	if !apply(t, s, id, "poller", claimed.LeaseToken, snap, next, now) {
		t.Fatalf("poll of %s at %v was fenced", id, now)
	}
}

func testNotifyClaimRebuilds(t *testing.T, s *taskstore.Store) {
	completedTask(t, s, "done")
	create(t, s, newTask("busy"), at(0)) // no event: never claimed
	if got := claimNotify(t, s, at(-time.Second), "owner-a"); len(got) != 0 {
		t.Fatalf("claimed %v before the event was due", ids(got))
	}
	c := claimNotifyOne(t, s, at(0), "owner-a", "done")
	if c.NotificationStatus != taskstore.NotifyClaimed || c.DispatchVersion != 1 || c.DispatchAttempt != 0 ||
		c.NotificationLeaseOwner != "owner-a" || len(c.NotificationLeaseToken) != 32 ||
		!c.NotificationLeaseExpiresAt.Equal(at(lease)) {
		t.Errorf("claimed row: %+v", c)
	}
	var ev map[string]any
	if err := json.Unmarshal(c.DispatchEvent, &ev); err != nil || ev["status"] != "completed" || ev["result"] != "ok" || ev["task_id"] != "done" {
		t.Errorf("dispatch_event = %s (%v), want the completed event", c.DispatchEvent, err)
	}
	if got := claimNotify(t, s, at(time.Second), "owner-b"); len(got) != 0 {
		t.Errorf("a live notification lease was claimed again: %v", ids(got))
	}
	// The lease expires: another owner takes it over with a new token.
	c2 := claimNotifyOne(t, s, at(lease+time.Second), "owner-b", "done")
	if c2.NotificationLeaseToken == c.NotificationLeaseToken || c2.DispatchVersion != 1 {
		t.Errorf("re-claim: token reused or version changed: %+v", c2)
	}
	ok, err := s.MarkDispatched(context.Background(), c.NotifyLease(), at(lease+2*time.Second))
	check(t, "MarkDispatched with the old lease", ok, err, false)
}

func testNotifyDelivered(t *testing.T, s *taskstore.Store) {
	completedTask(t, s, "done")
	c := claimNotifyOne(t, s, at(0), "owner-a", "done")
	l := c.NotifyLease()
	ok, err := s.FinishDelivered(context.Background(), l, at(time.Second))
	check(t, "FinishDelivered before MarkDispatched", ok, err, false)
	ok, err = s.MarkDispatched(context.Background(), l, at(time.Second))
	check(t, "MarkDispatched", ok, err, true)
	if got := get(t, s, "done"); got.NotificationStatus != taskstore.NotifyDispatched || got.NotificationLeaseToken != l.Token {
		t.Errorf("after MarkDispatched: status %q, token kept %v", got.NotificationStatus, got.NotificationLeaseToken == l.Token)
	}
	ok, err = s.FinishDelivered(context.Background(), l, at(2*time.Second))
	check(t, "FinishDelivered", ok, err, true)
	got := get(t, s, "done")
	if got.NotificationStatus != taskstore.NotifyDelivered || got.NotifiedVersion != 1 || got.DispatchVersion != 0 ||
		got.DispatchEvent != nil || !got.NextNotificationAt.IsZero() || got.NotificationLeaseOwner != "" {
		t.Errorf("after delivery: %+v", got)
	}
	if again := claimNotify(t, s, at(time.Hour), "owner-a"); len(again) != 0 {
		t.Errorf("a delivered event was claimed again: %v", ids(again))
	}
}

// A newer event recorded during a delivery is delivered afterwards.
func testNotifyNewerEventDuringDelivery(t *testing.T, s *taskstore.Store) {
	create(t, s, newTask("task-1"), at(0))
	pollTo(t, s, "task-1", at(0), taskstore.State{Status: "input_required", InputRequired: json.RawMessage(`{"q":"which?"}`)}, at(time.Minute))
	c := claimNotifyOne(t, s, at(time.Minute-time.Second), "owner-a", "task-1")
	l := c.NotifyLease()
	ok, err := s.MarkDispatched(context.Background(), l, at(time.Minute-time.Second))
	check(t, "MarkDispatched", ok, err, true)
	pollTo(t, s, "task-1", at(time.Minute), taskstore.State{Status: "completed", Result: json.RawMessage(`1`)}, time.Time{})
	if got := get(t, s, "task-1"); got.EventVersion != 2 || got.NotificationStatus != taskstore.NotifyDispatched {
		t.Fatalf("the newer event disturbed the delivery: version %d, status %q", got.EventVersion, got.NotificationStatus)
	}
	ok, err = s.FinishDelivered(context.Background(), l, at(time.Minute+time.Second))
	check(t, "FinishDelivered", ok, err, true)
	got := wantEvent(t, s, "task-1", 2, taskstore.NotifyPending, at(time.Minute+time.Second))
	if got.NotifiedVersion != 1 {
		t.Errorf("notified_version = %d, want 1", got.NotifiedVersion)
	}
	c = claimNotifyOne(t, s, at(2*time.Minute), "owner-a", "task-1")
	if c.DispatchVersion != 2 || c.DispatchAttempt != 0 || !json.Valid(c.DispatchEvent) {
		t.Fatalf("second claim: %+v", c)
	}
	var ev map[string]any
	_ = json.Unmarshal(c.DispatchEvent, &ev)
	if ev["status"] != "completed" {
		t.Errorf("the second delivery carries %v, want the completed event", ev["status"])
	}
}

// A failure the receiver answered moves to retry with a new attempt; a
// release keeps the attempt; a dispatched row is resent unchanged.
func testNotifyRetries(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	completedTask(t, s, "done")
	c := claimNotifyOne(t, s, at(0), "owner-a", "done")
	l := c.NotifyLease()
	ok, err := s.MarkDispatched(ctx, l, at(0))
	check(t, "MarkDispatched", ok, err, true)
	ok, err = s.FinishFailed(ctx, l, "webhook answered 500", true, at(5*time.Second), at(time.Second))
	check(t, "FinishFailed", ok, err, true)
	got := get(t, s, "done")
	if got.NotificationStatus != taskstore.NotifyRetry || got.DispatchAttempt != 1 || got.NotificationAttemptCount != 1 ||
		got.NotificationError != "webhook answered 500" || !got.NextNotificationAt.Equal(at(5*time.Second)) ||
		got.NotificationLeaseOwner != "" || string(got.DispatchEvent) != string(c.DispatchEvent) {
		t.Fatalf("after FinishFailed: %+v", got)
	}
	if early := claimNotify(t, s, at(4*time.Second), "owner-a"); len(early) != 0 {
		t.Fatalf("claimed before the retry time: %v", ids(early))
	}
	// A same-version retry keeps its attempt and counters.
	c = claimNotifyOne(t, s, at(5*time.Second), "owner-a", "done")
	if c.NotificationStatus != taskstore.NotifyRetry || c.DispatchAttempt != 1 || c.NotificationAttemptCount != 1 {
		t.Fatalf("retry claim: %+v", c)
	}
	l = c.NotifyLease()
	// A release (busy receiver) counts nothing and keeps the attempt.
	ok, err = s.ReleaseNotification(ctx, l, "", false, at(10*time.Second), at(6*time.Second))
	check(t, "ReleaseNotification", ok, err, true)
	got = get(t, s, "done")
	if got.NotificationStatus != taskstore.NotifyPending || got.DispatchAttempt != 1 || got.NotificationAttemptCount != 1 ||
		got.NotificationError != "webhook answered 500" || got.DispatchEvent != nil {
		t.Fatalf("after a release without counting: %+v", got)
	}
	c = claimNotifyOne(t, s, at(10*time.Second), "owner-a", "done")
	if c.DispatchAttempt != 1 || c.NotificationAttemptCount != 1 || c.DispatchEvent == nil {
		t.Fatalf("claim after release: %+v", c)
	}
	l = c.NotifyLease()
	ok, err = s.ReleaseNotification(ctx, l, "connection refused", true, at(20*time.Second), at(11*time.Second))
	check(t, "ReleaseNotification counting", ok, err, true)
	if got = get(t, s, "done"); got.NotificationAttemptCount != 2 || got.DispatchAttempt != 1 || got.NotificationError != "connection refused" {
		t.Fatalf("after a counted release: %+v", got)
	}
	// A send without an answer: counted, same snapshot, same attempt.
	c = claimNotifyOne(t, s, at(20*time.Second), "owner-a", "done")
	l = c.NotifyLease()
	ok, err = s.MarkDispatched(ctx, l, at(20*time.Second))
	check(t, "MarkDispatched", ok, err, true)
	ok, err = s.FinishFailed(ctx, l, "timed out", false, at(30*time.Second), at(21*time.Second))
	check(t, "FinishFailed without an answer", ok, err, true)
	got = get(t, s, "done")
	if got.NotificationStatus != taskstore.NotifyRetry || got.NotificationAttemptCount != 3 || got.DispatchAttempt != 1 ||
		string(got.DispatchEvent) != string(c.DispatchEvent) {
		t.Fatalf("after a send without an answer: %+v", got)
	}
	// A sender that dies after MarkDispatched: the next claim resends the
	// same snapshot and attempt.
	c = claimNotifyOne(t, s, at(30*time.Second), "owner-a", "done")
	ok, err = s.MarkDispatched(ctx, c.NotifyLease(), at(30*time.Second))
	check(t, "MarkDispatched", ok, err, true)
	c2 := claimNotifyOne(t, s, at(30*time.Second+lease+time.Second), "owner-b", "done")
	if c2.NotificationStatus != taskstore.NotifyDispatched || c2.DispatchAttempt != 1 || string(c2.DispatchEvent) != string(c.DispatchEvent) {
		t.Fatalf("re-claim of a dispatched row: %+v", c2)
	}
}

func testNotifyDeadLetter(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	completedTask(t, s, "done")
	c := claimNotifyOne(t, s, at(0), "owner-a", "done")
	ok, err := s.DeadLetter(ctx, c.NotifyLease(), "webhook answered 404", true, at(time.Second))
	check(t, "DeadLetter", ok, err, true)
	got := get(t, s, "done")
	if got.NotificationStatus != taskstore.NotifyDeadLetter || got.NotificationAttemptCount != 1 ||
		got.NotificationError != "webhook answered 404" || got.DispatchVersion != 0 || !got.NextNotificationAt.IsZero() {
		t.Fatalf("after DeadLetter: %+v", got)
	}
	if again := claimNotify(t, s, at(time.Hour), "owner-a"); len(again) != 0 {
		t.Errorf("a dead letter was claimed: %v", ids(again))
	}

	// With a newer event recorded meanwhile, the newer one is still owed.
	create(t, s, newTask("task-2"), at(0))
	pollTo(t, s, "task-2", at(0), taskstore.State{Status: "input_required", InputRequired: json.RawMessage(`{}`)}, at(time.Minute))
	c = claimNotifyOne(t, s, at(time.Minute-time.Second), "owner-a", "task-2")
	pollTo(t, s, "task-2", at(time.Minute), status("failed"), time.Time{})
	ok, err = s.DeadLetter(ctx, c.NotifyLease(), "gone", true, at(time.Minute+time.Second))
	check(t, "DeadLetter with a newer event", ok, err, true)
	got = wantEvent(t, s, "task-2", 2, taskstore.NotifyPending, at(time.Minute+time.Second))
	if got.NotificationAttemptCount != 0 {
		t.Errorf("counters not reset for the newer event: %+v", got)
	}
}

// Every outbox write is fenced by owner, token, unexpired lease and version.
func testNotifyFencing(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	completedTask(t, s, "done")
	c := claimNotifyOne(t, s, at(0), "owner-a", "done")
	good := c.NotifyLease()
	bad := []struct {
		name string
		l    taskstore.NotifyLease
		now  time.Time
	}{
		{"other owner", taskstore.NotifyLease{Lease: taskstore.Lease{ID: good.ID, Owner: "owner-b", Token: good.Token}, Version: good.Version}, at(time.Second)},
		{"other token", taskstore.NotifyLease{Lease: taskstore.Lease{ID: good.ID, Owner: good.Owner, Token: other(good.Token)}, Version: good.Version}, at(time.Second)},
		{"other version", taskstore.NotifyLease{Lease: taskstore.Lease{ID: good.ID, Owner: good.Owner, Token: good.Token}, Version: 2}, at(time.Second)},
		{"expired lease", good, at(lease + time.Millisecond)},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			before := get(t, s, "done")
			writes := map[string]func() (bool, error){
				"MarkDispatched":      func() (bool, error) { return s.MarkDispatched(ctx, b.l, b.now) },
				"ReleaseNotification": func() (bool, error) { return s.ReleaseNotification(ctx, b.l, "x", true, b.now, b.now) },
				"DeadLetter":          func() (bool, error) { return s.DeadLetter(ctx, b.l, "x", true, b.now) },
			}
			for name, write := range writes {
				ok, err := write()
				check(t, name, ok, err, false)
			}
			unchanged(t, s, before)
		})
	}
}

// ThreadEvents follows a thread's recorded events in order.
func testThreadEvents(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	create(t, s, newTask("working"), at(0)) // no event
	create(t, s, newTask("b", func(nt *taskstore.NewTask) { nt.State = status("failed") }), at(time.Second))
	create(t, s, newTask("a", func(nt *taskstore.NewTask) { nt.State = status("completed") }), at(2*time.Second))
	create(t, s, newTask("other-thread", func(nt *taskstore.NewTask) {
		nt.ThreadID, nt.State = "thread-2", status("completed")
	}), at(2*time.Second))
	evs, err := s.ThreadEvents(ctx, task.Scope{User: user, Thread: thread}, at(0), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(evs); !reflect.DeepEqual(got, []string{"b", "a"}) {
		t.Errorf("ThreadEvents = %v, want [b a]", got)
	}
	if evs, _ = s.ThreadEvents(ctx, task.Scope{User: user, Thread: thread}, at(1500*time.Millisecond), "", 10); !reflect.DeepEqual(ids(evs), []string{"a"}) {
		t.Errorf("ThreadEvents since 1.5s = %v, want [a]", ids(evs))
	}
	if evs, _ = s.ThreadEvents(ctx, task.Scope{User: "user-2", Thread: thread}, at(0), "", 10); len(evs) != 0 {
		t.Errorf("another user's events: %v", ids(evs))
	}
	// Paging by position reads rows sharing a millisecond exactly once.
	for i := range 5 {
		create(t, s, newTask(fmt.Sprintf("same-%d", i), func(nt *taskstore.NewTask) { nt.State = status("completed") }), at(time.Minute))
	}
	var paged []string
	pos, id := at(time.Minute), ""
	for {
		page, err := s.ThreadEvents(ctx, task.Scope{User: user, Thread: thread}, pos, id, 2)
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, ids(page)...)
		if len(page) < 2 {
			break
		}
		pos, id = page[len(page)-1].EventRecordedAt, page[len(page)-1].ID
	}
	if got := strings.Join(paged, " "); got != "same-0 same-1 same-2 same-3 same-4" {
		t.Errorf("paged ThreadEvents = %s", got)
	}
	var doc map[string]any
	if err := json.Unmarshal(s.Event(get(t, s, "a")), &doc); err != nil || doc["status"] != "completed" || doc["task_id"] != "a" {
		t.Errorf("Event(a) = %v (%v)", doc, err)
	}
}

// testNotifyClaimFairAcrossUsers is the attack on the outbox: user-a has 50
// undelivered events due before user-b's one, and a claim of 4 must still
// deliver user-b's. Events are taken one per user per turn, and a user whose
// deliveries are in flight waits behind one whose are not.
func testNotifyClaimFairAcrossUsers(t *testing.T, s *taskstore.Store) {
	completed := func(nt *taskstore.NewTask) { nt.State = status("completed") }
	for i := range 50 {
		create(t, s, newTask(fmt.Sprintf("a%02d", i), of("user-a"), completed), at(time.Duration(i)*time.Millisecond))
	}
	create(t, s, newTask("b0", of("user-b"), completed), at(time.Second))
	now := at(5 * time.Second)
	claimed := claimNotifyN(t, s, now, "owner", 4)
	if got, want := ids(claimed), []string{"a00", "a01", "a02", "b0"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("claim of 4 = %v, want %v (user-b's event in the first turn; rows in due order)", got, want)
	}
	for _, c := range claimed {
		if c.NotificationStatus != taskstore.NotifyClaimed || c.DispatchVersion != 1 || c.DispatchEvent == nil ||
			c.NotificationLeaseOwner != "owner" || !c.NotificationLeaseExpiresAt.Equal(now.Add(lease)) {
			t.Errorf("claimed row not rebuilt and leased: %+v", c)
		}
	}
	// user-a's three deliveries are in flight, user-b's one: user-b's next
	// event ranks second within its user, user-a's next fourth.
	create(t, s, newTask("b1", of("user-b"), completed), at(4*time.Second))
	if got := ids(claimNotifyN(t, s, now, "owner", 1)); !reflect.DeepEqual(got, []string{"b1"}) {
		t.Fatalf("claim of one with user-a's deliveries in flight = %v, want [b1]", got)
	}
	if got := ids(claimNotifyN(t, s, now, "owner", 1)); !reflect.DeepEqual(got, []string{"a03"}) {
		t.Fatalf("next claim of one = %v, want [a03]", got)
	}
	// No per-user bound: user-a alone takes the whole claim.
	if got := claimNotifyN(t, s, now, "owner", 10); len(got) != 10 || got[0].ID != "a04" {
		t.Fatalf("claim of 10 with only user-a's events free = %v, want a04 to a13", ids(got))
	}
}

// testConcurrentNotifyClaims races 8 claimers over 2,000 undelivered events of
// 10 users: each event must be claimed exactly once.
func testConcurrentNotifyClaims(t *testing.T, s *taskstore.Store) {
	const rows = 2000
	for i := range rows {
		create(t, s, newTask(fmt.Sprintf("task-%04d", i), of(fmt.Sprintf("user-%d", i%10)), func(nt *taskstore.NewTask) {
			nt.State = status("completed")
		}), at(0))
	}
	raceClaims(t, rows, func(owner string) ([]taskstore.Task, error) {
		return s.ClaimNotifications(context.Background(), at(time.Second), owner, time.Hour, 25)
	})
}
