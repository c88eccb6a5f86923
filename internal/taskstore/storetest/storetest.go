// Package storetest is the conformance suite every taskstore engine must
// pass, so that SQLite and PostgreSQL keep the same lease, fencing and
// cancellation semantics.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// Run runs the suite. open must return a new, empty store on each call and
// close (and if need be drop) it through t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) *taskstore.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s *taskstore.Store)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"CreateRefusesInvalidRows", testCreateRefusesInvalidRows},
		{"DuplicateRemoteTask", testDuplicateRemoteTask},
		{"ListByThread", testListByThread},
		{"ClaimDueOrder", testClaimDueOrder},
		{"ClaimSkipsLiveLeases", testClaimSkipsLiveLeases},
		{"ClaimRefusesBadArguments", testClaimRefusesBadArguments},
		{"ApplyStateFencing", testApplyStateFencing},
		{"NewerTokenFencesSameOwner", testNewerTokenFencesSameOwner},
		{"ApplyStateSchedules", testApplyStateSchedules},
		{"ReleaseClaimCountsErrors", testReleaseClaimCountsErrors},
		{"CancelFencesInFlightPoll", testCancelFencesInFlightPoll},
		{"RequestCancelScope", testRequestCancelScope},
		{"CancelRetry", testCancelRetry},
		{"ConcurrentClaims", testConcurrentClaims},
		{"EventOnCreate", testEventOnCreate},
		{"EventOnState", testEventOnState},
		{"EventOnDegradedTracking", testEventOnDegradedTracking},
		{"EventNotRecordedWhenFenced", testEventNotRecordedWhenFenced},
		{"NotifyClaimRebuilds", testNotifyClaimRebuilds},
		{"NotifyDelivered", testNotifyDelivered},
		{"NotifyNewerEventDuringDelivery", testNotifyNewerEventDuringDelivery},
		{"NotifyRetries", testNotifyRetries},
		{"NotifyDeadLetter", testNotifyDeadLetter},
		{"NotifyFencing", testNotifyFencing},
		{"NotifyClaimFairAcrossUsers", testNotifyClaimFairAcrossUsers},
		{"ConcurrentNotifyClaims", testConcurrentNotifyClaims},
		{"ThreadEvents", testThreadEvents},
		{"UserEvents", testUserEvents},
		{"ListByUser", testListByUser},
		{"HasActive", testHasActive},
		{"ClaimDueFairAcrossUsers", testClaimDueFairAcrossUsers},
		{"ClaimDueCountsLiveLeases", testClaimDueCountsLiveLeases},
		{"ClaimDuePerUserBound", testClaimDuePerUserBound},
		{"TaskSlots", testTaskSlots},
		{"ConcurrentTaskSlots", testConcurrentTaskSlots},
		{"CreateAfterReservationExpired", testCreateAfterReservationExpired},
		{"ClaimExcept", testClaimExcept},
		{"RecordAnswer", testRecordAnswer},
		{"RecordAnswerTo", testRecordAnswerTo},
		{"AnswerDelivery", testAnswerDelivery},
		{"AnswerRefused", testAnswerRefused},
		{"CancelAbandonsAnswer", testCancelAbandonsAnswer},
		{"ApplyPollDriverData", testApplyPollDriverData},
		{"Stats", testStats},
		{"Catalog", testCatalog},
		{"TraceParent", testTraceParent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, open(t)) })
	}
}

// at is the suite's clock: d after an origin on a whole millisecond, as
// stored times are.
func at(d time.Duration) time.Time {
	return time.UnixMilli(1_750_000_000_000).UTC().Add(d)
}

const (
	user   = "user-1"
	thread = "thread-1"
	lease  = 30 * time.Second
)

// newTask is a pollable task of user-1 in thread-1, due at at(0).
func newTask(id string, edits ...func(*taskstore.NewTask)) taskstore.NewTask {
	nt := taskstore.NewTask{
		ID:           id,
		UserID:       user,
		ThreadID:     thread,
		ServerName:   "reports",
		DriverName:   "ordinary-tools",
		RemoteTaskID: "remote-" + id,
		TaskName:     "Report " + id,
		State:        status("submitted"),
		NextPollAt:   at(0),
	}
	for _, edit := range edits {
		edit(&nt)
	}
	return nt
}

func create(t *testing.T, s *taskstore.Store, nt taskstore.NewTask, now time.Time) taskstore.Task {
	t.Helper()
	task, err := s.Create(context.Background(), nt, now)
	if err != nil {
		t.Fatalf("Create(%s): %v", nt.ID, err)
	}
	return task
}

func get(t *testing.T, s *taskstore.Store, id string) taskstore.Task {
	t.Helper()
	task, err := s.Get(context.Background(), id, user)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return task
}

func claimDue(t *testing.T, s *taskstore.Store, now time.Time, owner string, limit int) []taskstore.Task {
	t.Helper()
	tasks, err := s.ClaimDue(context.Background(), now, owner, lease, limit)
	if err != nil {
		t.Fatalf("ClaimDue: %v", err)
	}
	return tasks
}

// claimOne claims at now and expects exactly the task id.
func claimOne(t *testing.T, s *taskstore.Store, now time.Time, owner, id string) taskstore.Task {
	t.Helper()
	tasks := claimDue(t, s, now, owner, 10)
	if got := ids(tasks); !reflect.DeepEqual(got, []string{id}) {
		t.Fatalf("ClaimDue(%v, %s) = %v, want [%s]", now, owner, got, id)
	}
	return tasks[0]
}

func claimCancel(t *testing.T, s *taskstore.Store, now time.Time, owner string) []taskstore.Task {
	t.Helper()
	tasks, err := s.ClaimCancelRequests(context.Background(), now, owner, lease, 10)
	if err != nil {
		t.Fatalf("ClaimCancelRequests: %v", err)
	}
	return tasks
}

func apply(t *testing.T, s *taskstore.Store, id, owner, token string, snap taskstore.State, next, polled time.Time) bool {
	t.Helper()
	ok, err := s.ApplyState(context.Background(), taskstore.Lease{ID: id, Owner: owner, Token: token}, snap, next, polled)
	if err != nil {
		t.Fatalf("ApplyState(%s): %v", id, err)
	}
	return ok
}

func release(t *testing.T, s *taskstore.Store, id, owner, token string, next time.Time, errText string, now time.Time) bool {
	t.Helper()
	ok, err := s.ReleaseClaim(context.Background(), taskstore.Lease{ID: id, Owner: owner, Token: token}, next, errText, now)
	if err != nil {
		t.Fatalf("ReleaseClaim(%s): %v", id, err)
	}
	return ok
}

func requestCancel(t *testing.T, s *taskstore.Store, id string, now time.Time) taskstore.Task {
	t.Helper()
	task, err := s.RequestCancel(context.Background(), id, task.Scope{User: user, Thread: thread}, now)
	if err != nil {
		t.Fatalf("RequestCancel(%s): %v", id, err)
	}
	return task
}

// status is a snapshot carrying only a status.
func status(s task.Status) taskstore.State { return taskstore.State{Status: s} }

func ids(tasks []taskstore.Task) []string {
	out := []string{}
	for _, task := range tasks {
		out = append(out, task.ID)
	}
	return out
}

// unchanged fails unless the stored task still equals before.
func unchanged(t *testing.T, s *taskstore.Store, before taskstore.Task) {
	t.Helper()
	if after := get(t, s, before.ID); !reflect.DeepEqual(after, before) {
		t.Errorf("task %s changed:\n got %+v\nwant %+v", before.ID, after, before)
	}
}

func testCreateAndGet(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	nt := newTask("task-1", func(nt *taskstore.NewTask) {
		nt.RunID = "run-1"
		nt.ToolCallID = "call-1"
		nt.TaskName = "  Quarterly Straße REPORT "
		nt.State = taskstore.State{
			Status:          "input_required",
			Result:          json.RawMessage(`{"partial":[1,2]}`),
			ResultPreview:   "preview",
			ResultTruncated: true,
			ResultArtifact:  json.RawMessage(`{"uri":"s3://b/k","mime_type":"text/csv"}`),
			Error:           "almost",
			InputRequired:   json.RawMessage(`{"question":"Which quarter?"}`),
		}
		nt.DriverData = json.RawMessage(`{"status_tool":"report_status"}`)
		nt.NextPollAt = at(time.Minute)
	})
	created := create(t, s, nt, at(0))
	want := taskstore.Task{
		ID: "task-1", UserID: user, ThreadID: thread, RunID: "run-1", ToolCallID: "call-1",
		ServerName: "reports", DriverName: "ordinary-tools", RemoteTaskID: "remote-task-1",
		TaskName: nt.TaskName, TaskNameKey: "quarterly strasse report",
		State: nt.State, DriverData: nt.DriverData,
		NotificationStatus: "pending", EventVersion: 1, NextNotificationAt: at(0),
		EventFingerprint: fingerprint(`{"error":"almost","input_required":{"question":"Which quarter?"},` +
			`"last_poll_error":null,"result":{"partial":[1,2]},"result_artifact":{"mime_type":"text/csv","uri":"s3://b/k"},` +
			`"result_preview":"preview","result_truncated":true,"status":"input_required","task_id":"task-1",` +
			`"task_name":"  Quarterly Straße REPORT ","tracking_degraded":false}`),
		NextPollAt: at(time.Minute),
		CreatedAt:  at(0), UpdatedAt: at(0), EventRecordedAt: at(0),
	}
	if !reflect.DeepEqual(created, want) {
		t.Errorf("Create returned\n %+v\nwant %+v", created, want)
	}
	if got := get(t, s, "task-1"); !reflect.DeepEqual(got, want) {
		t.Errorf("Get returned\n %+v\nwant %+v", got, want)
	}

	for _, id := range []string{"task-1", "missing"} {
		if _, err := s.Get(ctx, id, "user-2"); !errors.Is(err, taskstore.ErrNotFound) {
			t.Errorf("Get(%s) as another user: err = %v, want ErrNotFound", id, err)
		}
	}

	done := create(t, s, newTask("done", func(nt *taskstore.NewTask) {
		nt.State = taskstore.State{Status: "completed", Result: json.RawMessage(`"ok"`)}
	}), at(time.Second))
	if !done.CompletedAt.Equal(at(time.Second)) || !done.NextPollAt.IsZero() {
		t.Errorf("terminal task: completed_at %v, next_poll_at %v; want %v and none", done.CompletedAt, done.NextPollAt, at(time.Second))
	}
	if string(done.DriverData) != "{}" {
		t.Errorf("default driver_data = %s, want {}", done.DriverData)
	}
}

func testCreateRefusesInvalidRows(t *testing.T, s *taskstore.Store) {
	tests := []struct {
		name string
		edit func(*taskstore.NewTask)
		ok   bool
	}{
		{"unknown status", func(nt *taskstore.NewTask) { nt.Status = "running" }, false},
		{"pollable without a next poll time", func(nt *taskstore.NewTask) { nt.NextPollAt = time.Time{} }, false},
		{"terminal without a next poll time", func(nt *taskstore.NewTask) { nt.Status = "failed"; nt.NextPollAt = time.Time{} }, true},
		{"empty id", func(nt *taskstore.NewTask) { nt.ID = "" }, false},
		{"empty user", func(nt *taskstore.NewTask) { nt.UserID = "" }, false},
		{"empty remote id", func(nt *taskstore.NewTask) { nt.RemoteTaskID = "" }, false},
		{"remote id of 256 characters", func(nt *taskstore.NewTask) { nt.RemoteTaskID = strings.Repeat("r", 256) }, false},
		{"remote id of 255 characters", func(nt *taskstore.NewTask) { nt.RemoteTaskID = strings.Repeat("r", 255) }, true},
		{"task name of 255 two-byte characters", func(nt *taskstore.NewTask) { nt.TaskName = strings.Repeat("é", 255) }, true},
		{"task name of 256 characters", func(nt *taskstore.NewTask) { nt.TaskName = strings.Repeat("n", 256) }, false},
		{"server name of 129 characters", func(nt *taskstore.NewTask) { nt.ServerName = strings.Repeat("s", 129) }, false},
		{"tool call id of 129 characters", func(nt *taskstore.NewTask) { nt.ToolCallID = strings.Repeat("c", 129) }, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nt := newTask(fmt.Sprintf("task-%d", i), tt.edit)
			_, err := s.Create(context.Background(), nt, at(0))
			if (err == nil) != tt.ok {
				t.Errorf("Create: err = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func testDuplicateRemoteTask(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	create(t, s, newTask("task-1", func(nt *taskstore.NewTask) { nt.RemoteTaskID = "r-1" }), at(0))

	_, err := s.Create(ctx, newTask("task-2", func(nt *taskstore.NewTask) { nt.RemoteTaskID = "r-1" }), at(0))
	var dup *taskstore.DuplicateError
	if !errors.As(err, &dup) {
		t.Fatalf("second Create of remote r-1: err = %v, want *DuplicateError", err)
	}
	if want := "Remote MCP task 'r-1' is already tracked for server 'reports' by this user"; err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
	if _, err := s.Get(ctx, "task-2", user); !errors.Is(err, taskstore.ErrNotFound) {
		t.Errorf("the duplicate was stored: Get err = %v", err)
	}

	// The same remote id is another task for another user or server.
	create(t, s, newTask("task-3", func(nt *taskstore.NewTask) { nt.RemoteTaskID = "r-1"; nt.UserID = "user-2" }), at(0))
	create(t, s, newTask("task-4", func(nt *taskstore.NewTask) { nt.RemoteTaskID = "r-1"; nt.ServerName = "other" }), at(0))

	// Other constraint violations are not duplicates of a remote task.
	_, err = s.Create(ctx, newTask("task-1", func(nt *taskstore.NewTask) { nt.RemoteTaskID = "r-9" }), at(0))
	if err == nil || errors.As(err, &dup) {
		t.Errorf("Create with a taken local id: err = %v, want a non-duplicate error", err)
	}
}

func testListByThread(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	create(t, s, newTask("a"), at(0))
	create(t, s, newTask("c"), at(time.Second))
	create(t, s, newTask("b"), at(time.Second)) // same created_at as c: id breaks the tie
	create(t, s, newTask("d", func(nt *taskstore.NewTask) { nt.Status = "completed" }), at(2*time.Second))
	create(t, s, newTask("other-thread", func(nt *taskstore.NewTask) { nt.ThreadID = "thread-2" }), at(3*time.Second))
	create(t, s, newTask("other-user", func(nt *taskstore.NewTask) { nt.UserID = "user-2" }), at(3*time.Second))

	tests := []struct {
		name       string
		user       string
		limit      int
		activeOnly bool
		want       []string
	}{
		{"all", user, 50, false, []string{"d", "c", "b", "a"}},
		{"active only", user, 50, true, []string{"c", "b", "a"}},
		{"limited", user, 2, false, []string{"d", "c"}},
		{"another user", "user-2", 50, false, []string{"other-user"}},
		{"a user without tasks", "user-3", 50, false, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tasks, err := s.ListByThread(ctx, task.Scope{User: tt.user, Thread: thread}, tt.limit, tt.activeOnly)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(tasks); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ListByThread = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := s.ListByThread(ctx, task.Scope{User: user, Thread: thread}, 0, false); err == nil {
		t.Error("ListByThread with limit 0: want an error")
	}
}

func testClaimDueOrder(t *testing.T, s *taskstore.Store) {
	due := map[string]time.Duration{"t3": time.Second, "t1": 2 * time.Second, "t2": time.Second, "t4": 3 * time.Second}
	for _, id := range []string{"t1", "t2", "t3", "t4"} {
		create(t, s, newTask(id, func(nt *taskstore.NewTask) { nt.NextPollAt = at(due[id]) }), at(0))
	}
	create(t, s, newTask("future", func(nt *taskstore.NewTask) { nt.NextPollAt = at(time.Hour) }), at(0))
	create(t, s, newTask("done", func(nt *taskstore.NewTask) { nt.Status = "failed" }), at(0))
	create(t, s, newTask("cancelling"), at(0))
	requestCancel(t, s, "cancelling", at(0))

	now := at(5 * time.Second)
	first := claimDue(t, s, now, "owner-a", 3)
	if got, want := ids(first), []string{"t2", "t3", "t1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first claim = %v, want %v (next_poll_at, then id)", got, want)
	}
	tokens := map[string]bool{}
	for _, task := range first {
		if task.LeaseOwner != "owner-a" || !task.LeaseExpiresAt.Equal(now.Add(lease)) ||
			task.PollAttemptCount != 1 || !task.UpdatedAt.Equal(now) {
			t.Errorf("claimed %s: owner %q, expires %v, attempts %d, updated %v", task.ID,
				task.LeaseOwner, task.LeaseExpiresAt, task.PollAttemptCount, task.UpdatedAt)
		}
		if len(task.LeaseToken) != 32 || tokens[task.LeaseToken] {
			t.Errorf("claimed %s: token %q is not a fresh 32-digit token", task.ID, task.LeaseToken)
		}
		tokens[task.LeaseToken] = true
		if stored := get(t, s, task.ID); !reflect.DeepEqual(stored, task) {
			t.Errorf("claim returned %+v, stored %+v", task, stored)
		}
	}
	if got := ids(claimDue(t, s, now, "owner-a", 10)); !reflect.DeepEqual(got, []string{"t4"}) {
		t.Errorf("second claim = %v, want [t4]", got)
	}
	if got := ids(claimDue(t, s, now, "owner-b", 10)); len(got) != 0 {
		t.Errorf("third claim = %v, want none", got)
	}
}

func testClaimSkipsLiveLeases(t *testing.T, s *taskstore.Store) {
	create(t, s, newTask("task-1"), at(0))
	a := claimOne(t, s, at(0), "owner-a", "task-1")

	for _, now := range []time.Time{at(10 * time.Second), a.LeaseExpiresAt} {
		if got := claimDue(t, s, now, "owner-b", 10); len(got) != 0 {
			t.Errorf("claim at %v while owner-a's lease lives = %v, want none", now, ids(got))
		}
	}
	b := claimOne(t, s, a.LeaseExpiresAt.Add(time.Millisecond), "owner-b", "task-1")
	if b.LeaseOwner != "owner-b" || b.LeaseToken == a.LeaseToken || b.PollAttemptCount != 2 {
		t.Errorf("reclaimed lease: owner %q, token reused %v, attempts %d", b.LeaseOwner, b.LeaseToken == a.LeaseToken, b.PollAttemptCount)
	}
	if apply(t, s, "task-1", "owner-a", a.LeaseToken, status("working"), at(time.Hour), a.LeaseExpiresAt) {
		t.Error("owner-a applied a result after losing its lease")
	}
	if release(t, s, "task-1", "owner-a", a.LeaseToken, at(time.Hour), "late", a.LeaseExpiresAt) {
		t.Error("owner-a released owner-b's lease")
	}
	unchanged(t, s, b)
}

func testClaimRefusesBadArguments(t *testing.T, s *taskstore.Store) {
	tests := []struct {
		name  string
		owner string
		lease time.Duration
		limit int
	}{
		{"empty owner", "", lease, 1},
		{"owner of 129 characters", strings.Repeat("o", 129), lease, 1},
		{"no lease", "owner", 0, 1},
		{"limit 0", "owner", lease, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := s.ClaimDue(context.Background(), at(0), tt.owner, tt.lease, tt.limit); err == nil {
				t.Error("ClaimDue: want an error")
			}
			if _, err := s.ClaimCancelRequests(context.Background(), at(0), tt.owner, tt.lease, tt.limit); err == nil {
				t.Error("ClaimCancelRequests: want an error")
			}
		})
	}
}

func testApplyStateFencing(t *testing.T, s *taskstore.Store) {
	tests := []struct {
		name   string
		owner  string
		token  func(leased string) string
		polled time.Duration // after the claim
		ok     bool
	}{
		{"lease holder", "owner-a", same, 5 * time.Second, true},
		{"lease holder at the expiry instant", "owner-a", same, lease, true},
		{"other owner with the token", "owner-b", same, 5 * time.Second, false},
		{"lease holder with another token", "owner-a", other, 5 * time.Second, false},
		{"lease holder without a token", "owner-a", func(string) string { return "" }, 5 * time.Second, false},
		{"lease expired when the poll completed", "owner-a", same, lease + time.Millisecond, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("task-%d", i)
			create(t, s, newTask(id), at(0))
			claimed := claimOne(t, s, at(0), "owner-a", id)
			snap := taskstore.State{Status: "working", Result: json.RawMessage(`{"pct":50}`)}
			polled, next := at(tt.polled), at(time.Hour)
			if got := apply(t, s, id, tt.owner, tt.token(claimed.LeaseToken), snap, next, polled); got != tt.ok {
				t.Fatalf("ApplyState = %v, want %v", got, tt.ok)
			}
			if !tt.ok {
				unchanged(t, s, claimed)
				return
			}
			want := claimed
			want.State = snap
			want.NextPollAt, want.LastPolledAt, want.UpdatedAt = next, polled, polled
			want.LeaseOwner, want.LeaseExpiresAt, want.LeaseToken = "", time.Time{}, ""
			unchanged(t, s, want)
		})
	}
}

func same(token string) string  { return token }
func other(token string) string { return strings.Repeat("0", len(token)) }

func testNewerTokenFencesSameOwner(t *testing.T, s *taskstore.Store) {
	create(t, s, newTask("task-1"), at(0))
	first := claimOne(t, s, at(0), "owner-a", "task-1")
	second := claimOne(t, s, first.LeaseExpiresAt.Add(time.Millisecond), "owner-a", "task-1")

	late := second.LeaseExpiresAt.Add(-time.Second)
	if apply(t, s, "task-1", "owner-a", first.LeaseToken, status("working"), at(time.Hour), late) {
		t.Error("a poll of the first claim applied over the second claim")
	}
	if release(t, s, "task-1", "owner-a", first.LeaseToken, at(time.Hour), "late", late) {
		t.Error("a late release of the first claim cleared the second claim")
	}
	unchanged(t, s, second)
	if !apply(t, s, "task-1", "owner-a", second.LeaseToken, status("working"), at(time.Hour), late) {
		t.Error("the second claim could not apply its result")
	}
}

func testApplyStateSchedules(t *testing.T, s *taskstore.Store) {
	create(t, s, newTask("asking"), at(0))
	create(t, s, newTask("done"), at(0))
	claimed := claimDue(t, s, at(0), "owner-a", 10)
	tokens := map[string]string{}
	for _, task := range claimed {
		tokens[task.ID] = task.LeaseToken
	}

	// input_required stays scheduled, for the slower poll the service chose.
	asking := taskstore.State{Status: "input_required", InputRequired: json.RawMessage(`{"question":"Which?"}`)}
	if _, err := s.ApplyState(context.Background(), taskstore.Lease{ID: "asking", Owner: "owner-a", Token: tokens["asking"]}, asking, time.Time{}, at(time.Second)); err == nil {
		t.Error("ApplyState of a pollable status without a next poll time: want an error")
	}
	if !apply(t, s, "asking", "owner-a", tokens["asking"], asking, at(time.Minute), at(time.Second)) {
		t.Fatal("apply input_required was fenced")
	}
	// A terminal result completes the task and ends its polling.
	result := taskstore.State{Status: "completed", Result: json.RawMessage(`{"rows":3}`)}
	if !apply(t, s, "done", "owner-a", tokens["done"], result, at(time.Minute), at(time.Second)) {
		t.Fatal("apply completed was fenced")
	}
	if done := get(t, s, "done"); !done.CompletedAt.Equal(at(time.Second)) || !done.NextPollAt.IsZero() ||
		done.Status != "completed" || string(done.Result) != `{"rows":3}` {
		t.Errorf("completed task: status %s, result %s, completed_at %v, next_poll_at %v",
			done.Status, done.Result, done.CompletedAt, done.NextPollAt)
	}
	if apply(t, s, "done", "owner-a", tokens["done"], status("working"), at(time.Hour), at(2*time.Second)) {
		t.Error("a second result was applied to a terminal task")
	}

	if got := claimDue(t, s, at(time.Minute-time.Millisecond), "owner-b", 10); len(got) != 0 {
		t.Errorf("claim before the input_required poll is due = %v, want none", ids(got))
	}
	if got := ids(claimDue(t, s, at(time.Minute), "owner-b", 10)); !reflect.DeepEqual(got, []string{"asking"}) {
		t.Errorf("claim when due = %v, want [asking] (a completed task is never polled)", got)
	}
}

func testReleaseClaimCountsErrors(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	create(t, s, newTask("task-1"), at(0))
	now := at(0)
	for n := 1; n <= 2; n++ {
		claimed := claimOne(t, s, now, "owner-a", "task-1")
		next := now.Add(5 * time.Second)
		if !release(t, s, "task-1", "owner-a", claimed.LeaseToken, next, fmt.Sprintf("boom %d", n), now.Add(time.Second)) {
			t.Fatalf("release %d was fenced", n)
		}
		got := get(t, s, "task-1")
		if got.ConsecutivePollErrorCount != n || got.LastPollError != fmt.Sprintf("boom %d", n) ||
			!got.NextPollAt.Equal(next) || got.LeaseOwner != "" || got.LeaseToken != "" || !got.LeaseExpiresAt.IsZero() {
			t.Errorf("after release %d: errors %d, last error %q, next %v, lease %q/%q/%v", n,
				got.ConsecutivePollErrorCount, got.LastPollError, got.NextPollAt, got.LeaseOwner, got.LeaseToken, got.LeaseExpiresAt)
		}
		now = next
	}

	claimed := claimOne(t, s, now, "owner-a", "task-1")
	if _, err := s.ReleaseClaim(ctx, taskstore.Lease{ID: "task-1", Owner: "owner-a", Token: claimed.LeaseToken}, time.Time{}, "boom", now); err == nil {
		t.Error("ReleaseClaim without a next poll time: want an error")
	}
	if !apply(t, s, "task-1", "owner-a", claimed.LeaseToken, status("working"), now.Add(time.Minute), now) {
		t.Fatal("apply was fenced")
	}
	if got := get(t, s, "task-1"); got.ConsecutivePollErrorCount != 0 || got.LastPollError != "" || got.PollAttemptCount != 3 {
		t.Errorf("after a successful poll: errors %d, last error %q, attempts %d; want 0, none, 3",
			got.ConsecutivePollErrorCount, got.LastPollError, got.PollAttemptCount)
	}
}

func testCancelFencesInFlightPoll(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	create(t, s, newTask("task-1"), at(0))
	poll := claimOne(t, s, at(0), "poller", "task-1")

	requested := requestCancel(t, s, "task-1", at(time.Second))
	if !requested.CancelRequestedAt.Equal(at(time.Second)) || !requested.NextCancelAt.Equal(at(time.Second)) ||
		requested.LeaseOwner != "" || requested.LeaseToken != "" || !requested.LeaseExpiresAt.IsZero() {
		t.Fatalf("first cancel request: requested %v, next cancel %v, lease %q/%q/%v", requested.CancelRequestedAt,
			requested.NextCancelAt, requested.LeaseOwner, requested.LeaseToken, requested.LeaseExpiresAt)
	}
	if apply(t, s, "task-1", "poller", poll.LeaseToken, status("working"), at(time.Hour), at(2*time.Second)) {
		t.Error("the in-flight poll applied its result after the cancel request")
	}
	if release(t, s, "task-1", "poller", poll.LeaseToken, at(time.Hour), "late", at(2*time.Second)) {
		t.Error("the in-flight poll released after the cancel request")
	}
	if got := claimDue(t, s, at(time.Hour), "poller", 10); len(got) != 0 {
		t.Errorf("a task asked to cancel was claimed for polling: %v", ids(got))
	}
	if again := requestCancel(t, s, "task-1", at(3*time.Second)); !reflect.DeepEqual(again, requested) {
		t.Errorf("a repeated request changed the task:\n got %+v\nwant %+v", again, requested)
	}

	claims := claimCancel(t, s, at(time.Second), "canceller")
	if len(claims) != 1 || claims[0].CancelAttemptCount != 1 || len(claims[0].LeaseToken) != 32 {
		t.Fatalf("cancel claim = %+v, want task-1 with attempt 1 and a token", claims)
	}
	cancel := claims[0]
	if again := requestCancel(t, s, "task-1", at(4*time.Second)); !reflect.DeepEqual(again, cancel) {
		t.Errorf("a repeated request disturbed the cancel lease:\n got %+v\nwant %+v", again, cancel)
	}
	if got := claimCancel(t, s, at(5*time.Second), "canceller-2"); len(got) != 0 {
		t.Errorf("a second canceller claimed the live cancel lease: %v", ids(got))
	}

	_, err := s.ApplyCancelState(ctx, taskstore.Lease{ID: "task-1", Owner: "canceller", Token: cancel.LeaseToken}, status("working"), at(6*time.Second))
	if !errors.Is(err, taskstore.ErrNotTerminal) {
		t.Errorf("ApplyCancelState(working): err = %v, want ErrNotTerminal", err)
	}
	ok, err := s.ApplyCancelState(ctx, taskstore.Lease{ID: "task-1", Owner: "canceller", Token: cancel.LeaseToken},
		taskstore.State{Status: "cancelled", Error: "cancelled by user"}, at(6*time.Second))
	if err != nil || !ok {
		t.Fatalf("ApplyCancelState(cancelled) = %v, %v", ok, err)
	}
	want := cancel
	want.State = taskstore.State{Status: "cancelled", Error: "cancelled by user"}
	want.NextPollAt, want.NextCancelAt = time.Time{}, time.Time{}
	want.LeaseOwner, want.LeaseExpiresAt, want.LeaseToken = "", time.Time{}, ""
	want.CompletedAt, want.UpdatedAt = at(6*time.Second), at(6*time.Second)
	want.NotificationStatus, want.EventVersion, want.NextNotificationAt = "pending", 1, at(6*time.Second)
	want.EventRecordedAt = at(6 * time.Second)
	want.EventFingerprint = fingerprint(`{"error":"cancelled by user","input_required":null,"last_poll_error":null,` +
		`"result":null,"result_artifact":null,"result_preview":null,"result_truncated":false,"status":"cancelled",` +
		`"task_id":"task-1","task_name":"Report task-1","tracking_degraded":false}`)
	unchanged(t, s, want)
	if again := requestCancel(t, s, "task-1", at(7*time.Second)); !reflect.DeepEqual(again, want) {
		t.Errorf("a cancel request on a cancelled task changed it:\n got %+v\nwant %+v", again, want)
	}
	if got := claimCancel(t, s, at(time.Hour), "canceller"); len(got) != 0 {
		t.Errorf("a cancelled task was claimed for cancellation again: %v", ids(got))
	}
}

func testRequestCancelScope(t *testing.T, s *taskstore.Store) {
	create(t, s, newTask("task-1"), at(0))
	done := create(t, s, newTask("done", func(nt *taskstore.NewTask) { nt.Status = "completed" }), at(0))
	tests := []struct {
		name, id, user, thread string
	}{
		{"another user", "task-1", "user-2", thread},
		{"another thread", "task-1", user, "thread-2"},
		{"unknown task", "missing", user, thread},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.RequestCancel(context.Background(), tt.id, task.Scope{User: tt.user, Thread: tt.thread}, at(0))
			if !errors.Is(err, taskstore.ErrNotFound) {
				t.Errorf("RequestCancel: err = %v, want ErrNotFound", err)
			}
		})
	}
	if got := get(t, s, "task-1"); !got.CancelRequestedAt.IsZero() {
		t.Error("an out-of-scope request marked the task")
	}
	if got := requestCancel(t, s, "done", at(0)); !reflect.DeepEqual(got, done) {
		t.Errorf("a cancel request on a completed task changed it:\n got %+v\nwant %+v", got, done)
	}
}

func testCancelRetry(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	for _, id := range []string{"task-b", "task-a", "task-c"} {
		create(t, s, newTask(id), at(0))
	}
	requestCancel(t, s, "task-b", at(time.Second))
	requestCancel(t, s, "task-a", at(time.Second))
	requestCancel(t, s, "task-c", at(0))
	claims := claimCancel(t, s, at(time.Second), "canceller")
	if got, want := ids(claims), []string{"task-c", "task-a", "task-b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("cancel claim = %v, want %v (next_cancel_at, then id)", got, want)
	}
	c := claims[0]

	releaseCancel := func(owner, token string, next time.Time, errText string) bool {
		t.Helper()
		ok, err := s.ReleaseCancelClaim(ctx, taskstore.Lease{ID: "task-c", Owner: owner, Token: token}, next, errText, at(2*time.Second))
		if err != nil {
			t.Fatalf("ReleaseCancelClaim: %v", err)
		}
		return ok
	}
	if releaseCancel("canceller", other(c.LeaseToken), at(time.Minute), "x") ||
		releaseCancel("canceller-2", c.LeaseToken, at(time.Minute), "x") {
		t.Error("a cancel release without the lease went through")
	}
	if !releaseCancel("canceller", c.LeaseToken, at(10*time.Second), "server unreachable") {
		t.Fatal("cancel release was fenced")
	}
	got := get(t, s, "task-c")
	if got.LastCancelError != "server unreachable" || !got.NextCancelAt.Equal(at(10*time.Second)) ||
		got.LeaseToken != "" || got.CancelRequestedAt.IsZero() {
		t.Errorf("after release: last error %q, next cancel %v, token %q, requested %v",
			got.LastCancelError, got.NextCancelAt, got.LeaseToken, got.CancelRequestedAt)
	}
	if early := claimCancel(t, s, at(10*time.Second-time.Millisecond), "canceller"); len(early) != 0 {
		t.Errorf("cancel claimed before its retry time: %v", ids(early))
	}
	retry := claimCancel(t, s, at(10*time.Second), "canceller")
	if len(retry) != 1 || retry[0].CancelAttemptCount != 2 {
		t.Fatalf("retry claim = %+v, want task-c with attempt 2", retry)
	}
	if _, err := s.ReleaseCancelClaim(ctx, taskstore.Lease{ID: "task-c", Owner: "canceller", Token: retry[0].LeaseToken}, time.Time{}, "", at(0)); err == nil {
		t.Error("ReleaseCancelClaim without a next time: want an error")
	}
	if !releaseCancel("canceller", retry[0].LeaseToken, at(20*time.Second), "") {
		t.Fatal("routine cancel release was fenced")
	}
	if got := get(t, s, "task-c"); got.LastCancelError != "server unreachable" {
		t.Errorf("a routine release replaced last_cancel_error with %q", got.LastCancelError)
	}

	late := claimCancel(t, s, at(20*time.Second), "canceller")
	if len(late) != 1 {
		t.Fatalf("third cancel claim = %v, want task-c", ids(late))
	}
	expired := late[0].LeaseExpiresAt.Add(time.Millisecond)
	ok, err := s.ApplyCancelState(ctx, taskstore.Lease{ID: "task-c", Owner: "canceller", Token: late[0].LeaseToken}, status("cancelled"), expired)
	if err != nil || ok {
		t.Errorf("ApplyCancelState after the lease expired = %v, %v; want false", ok, err)
	}
	ok, err = s.ApplyCancelState(ctx, taskstore.Lease{ID: "task-c", Owner: "canceller-2", Token: late[0].LeaseToken}, status("cancelled"), at(21*time.Second))
	if err != nil || ok {
		t.Errorf("ApplyCancelState by another owner = %v, %v; want false", ok, err)
	}
}

// testConcurrentClaims races 8 claimers over 2,000 due rows: each row must be
// claimed exactly once.
func testConcurrentClaims(t *testing.T, s *taskstore.Store) {
	const rows = 2000
	for i := range rows {
		create(t, s, newTask(fmt.Sprintf("task-%04d", i)), at(0))
	}
	raceClaims(t, rows, func(owner string) ([]taskstore.Task, error) {
		return s.ClaimDue(context.Background(), at(time.Second), owner, time.Hour, 25)
	})
}

// raceClaims runs 8 claimers at once, each calling claim until it comes back
// empty, and fails unless rows distinct rows were claimed, none twice.
func raceClaims(t *testing.T, rows int, claim func(owner string) ([]taskstore.Task, error)) {
	t.Helper()
	const claimers = 8
	var (
		mu      sync.Mutex
		claimed = map[string]string{}
		wg      sync.WaitGroup
		start   = make(chan struct{})
	)
	for c := range claimers {
		owner := fmt.Sprintf("claimer-%d", c)
		wg.Go(func() {
			<-start
			for {
				tasks, err := claim(owner)
				if err != nil {
					t.Errorf("%s: claim: %v", owner, err)
					return
				}
				if len(tasks) == 0 {
					return
				}
				mu.Lock()
				for _, task := range tasks {
					if prev, dup := claimed[task.ID]; dup {
						t.Errorf("%s claimed %s, already claimed by %s", owner, task.ID, prev)
					}
					claimed[task.ID] = owner
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(claimed) != rows {
		t.Errorf("claimed %d distinct rows, want %d", len(claimed), rows)
	}
}

// fingerprint is the SHA-256 hex digest of an event's canonical JSON.
func fingerprint(canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return hex.EncodeToString(sum[:])
}

// wantEvent fails unless the task's event state is version, notification
// status and next notification time.
func wantEvent(t *testing.T, s *taskstore.Store, id string, version int, status string, next time.Time) taskstore.Task {
	t.Helper()
	got := get(t, s, id)
	if got.EventVersion != version || got.NotificationStatus != status || !got.NextNotificationAt.Equal(next) {
		t.Errorf("task %s: event_version %d, notification %q at %v; want %d, %q at %v", id,
			got.EventVersion, got.NotificationStatus, got.NextNotificationAt, version, status, next)
	}
	if (version == 0) != (got.EventFingerprint == "") {
		t.Errorf("task %s: event_version %d with fingerprint %q", id, version, got.EventFingerprint)
	}
	return got
}

func testEventOnCreate(t *testing.T, s *taskstore.Store) {
	create(t, s, newTask("done", func(nt *taskstore.NewTask) {
		nt.State = taskstore.State{Status: "completed", Result: json.RawMessage(`{"b":1, "a":"<&>"}`)}
	}), at(time.Second))
	done := wantEvent(t, s, "done", 1, "pending", at(time.Second))
	// Keys sorted at every level, compact, no HTML escaping.
	want := fingerprint(`{"error":null,"input_required":null,"last_poll_error":null,"result":{"a":"<&>","b":1},` +
		`"result_artifact":null,"result_preview":null,"result_truncated":false,"status":"completed",` +
		`"task_id":"done","task_name":"Report done","tracking_degraded":false}`)
	if done.EventFingerprint != want {
		t.Errorf("fingerprint = %s, want %s", done.EventFingerprint, want)
	}
	if done.NotifiedVersion != 0 || done.DispatchVersion != 0 || done.DispatchAttempt != 0 ||
		done.DispatchEvent != nil || done.NotificationRunID != "" || done.NotificationAttemptCount != 0 {
		t.Errorf("a new event left delivery state: %+v", done)
	}
	for _, st := range []task.Status{"submitted", "working"} {
		create(t, s, newTask(string(st), func(nt *taskstore.NewTask) { nt.Status = st }), at(0))
		wantEvent(t, s, string(st), 0, "none", time.Time{})
	}
}

func testEventOnState(t *testing.T, s *taskstore.Store) {
	create(t, s, newTask("task-1"), at(0))
	poll := func(now time.Time, snap taskstore.State) {
		t.Helper()
		claimed := claimOne(t, s, now, "owner-a", "task-1")
		if !apply(t, s, "task-1", "owner-a", claimed.LeaseToken, snap, now.Add(time.Minute), now.Add(time.Second)) {
			t.Fatalf("apply at %v was fenced", now)
		}
	}
	working := func(pct int) taskstore.State {
		return taskstore.State{Status: "working", Result: json.RawMessage(fmt.Sprintf(`{"pct":%d}`, pct))}
	}
	asking := func(q string) taskstore.State {
		return taskstore.State{Status: "input_required", InputRequired: json.RawMessage(`{"question":"` + q + `"}`)}
	}
	// working → working with new content is no event.
	poll(at(0), working(10))
	poll(at(time.Minute), working(20))
	wantEvent(t, s, "task-1", 0, "none", time.Time{})

	poll(at(2*time.Minute), asking("Which?"))
	first := wantEvent(t, s, "task-1", 1, "pending", at(2*time.Minute+time.Second))
	// The same answer again (spelled differently) records nothing.
	poll(at(3*time.Minute), taskstore.State{Status: "input_required", InputRequired: json.RawMessage(`{ "question" : "Which?" }`)})
	if got := wantEvent(t, s, "task-1", 1, "pending", at(2*time.Minute+time.Second)); got.EventFingerprint != first.EventFingerprint {
		t.Errorf("fingerprint changed from %s to %s for the same event", first.EventFingerprint, got.EventFingerprint)
	}
	poll(at(4*time.Minute), asking("Which one?"))
	wantEvent(t, s, "task-1", 2, "pending", at(4*time.Minute+time.Second))
	poll(at(5*time.Minute), taskstore.State{Status: "completed", Result: json.RawMessage(`"done"`)})
	wantEvent(t, s, "task-1", 3, "pending", at(5*time.Minute+time.Second))
}

func testEventOnDegradedTracking(t *testing.T, s *taskstore.Store) {
	if n := s.TrackingDegradedAfter(); n != 3 || taskstore.DefaultTrackingDegradedAfter != 3 {
		t.Fatalf("TrackingDegradedAfter = %d, want the default 3", n)
	}
	create(t, s, newTask("task-1"), at(0))
	now := at(0)
	fail := func(errText string) {
		t.Helper()
		claimed := claimOne(t, s, now, "owner-a", "task-1")
		if !release(t, s, "task-1", "owner-a", claimed.LeaseToken, now.Add(time.Second), errText, now) {
			t.Fatalf("release at %v was fenced", now)
		}
		now = now.Add(time.Second)
	}
	fail("boom")
	fail("boom")
	wantEvent(t, s, "task-1", 0, "none", time.Time{})
	fail("boom") // the third consecutive error degrades tracking
	got := wantEvent(t, s, "task-1", 1, "pending", at(2*time.Second))
	want := fingerprint(`{"error":null,"input_required":null,"last_poll_error":"boom","result":null,` +
		`"result_artifact":null,"result_preview":null,"result_truncated":false,"status":"submitted",` +
		`"task_id":"task-1","task_name":"Report task-1","tracking_degraded":true}`)
	if got.EventFingerprint != want {
		t.Errorf("degraded fingerprint = %s, want %s", got.EventFingerprint, want)
	}
	fail("boom") // still degraded with the same error: the same event
	wantEvent(t, s, "task-1", 1, "pending", at(2*time.Second))
	fail("timeout")
	wantEvent(t, s, "task-1", 2, "pending", at(4*time.Second))
}

func testEventNotRecordedWhenFenced(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	create(t, s, newTask("task-1"), at(0))
	claimed := claimOne(t, s, at(0), "owner-a", "task-1")
	done := taskstore.State{Status: "completed"}
	if apply(t, s, "task-1", "owner-a", other(claimed.LeaseToken), done, time.Time{}, at(time.Second)) {
		t.Fatal("a fenced apply went through")
	}
	for range 3 {
		if release(t, s, "task-1", "owner-b", claimed.LeaseToken, at(time.Second), "boom", at(time.Second)) {
			t.Fatal("a fenced release went through")
		}
	}
	unchanged(t, s, claimed)

	requestCancel(t, s, "task-1", at(time.Second))
	cancel := claimCancel(t, s, at(time.Second), "canceller")[0]
	if ok, err := s.ApplyCancelState(ctx, taskstore.Lease{ID: "task-1", Owner: "canceller", Token: other(cancel.LeaseToken)}, status("cancelled"), at(2*time.Second)); err != nil || ok {
		t.Fatalf("a fenced ApplyCancelState = %v, %v", ok, err)
	}
	unchanged(t, s, cancel)
}

// InFlightNotification checks that recording an event while a notification
// of an earlier one is in flight (claimed, dispatched or retry) bumps
// event_version but leaves the delivery alone. Run cannot reach the database
// behind a Store, so engines call this with db, a separate connection to the
// store's database, used to put the notification in flight.
func InFlightNotification(t *testing.T, s *taskstore.Store, db *sql.DB) {
	for i, st := range []string{"claimed", "dispatched", "retry"} {
		t.Run(st, func(t *testing.T) {
			id := fmt.Sprintf("task-%d", i)
			create(t, s, newTask(id), at(0))
			claimed := claimOne(t, s, at(0), "owner-a", id)
			if !apply(t, s, id, "owner-a", claimed.LeaseToken, status("input_required"), at(time.Minute), at(time.Second)) {
				t.Fatal("apply was fenced")
			}
			if _, err := db.Exec(`UPDATE mcp_tasks SET notification_status = $2, dispatch_version = 1,
 dispatch_attempt = 2, dispatch_event = '{"v":1}', notification_run_id = 'run-9', notification_error = 'slow',
 notification_attempt_count = 2, next_notification_at = $3 WHERE id = $1`, id, st, at(time.Hour).UnixMilli()); err != nil {
				t.Fatal(err)
			}
			before := get(t, s, id)
			claimed = claimOne(t, s, at(time.Minute), "owner-a", id)
			snap := taskstore.State{Status: "completed", Result: json.RawMessage(`"ok"`)}
			if !apply(t, s, id, "owner-a", claimed.LeaseToken, snap, time.Time{}, at(time.Minute+time.Second)) {
				t.Fatal("apply was fenced")
			}
			got := get(t, s, id)
			if got.EventVersion != 2 || got.EventFingerprint == before.EventFingerprint {
				t.Errorf("event_version %d (fingerprint changed %v), want 2 and a new fingerprint",
					got.EventVersion, got.EventFingerprint != before.EventFingerprint)
			}
			if got.NotificationStatus != st || got.DispatchVersion != 1 || got.DispatchAttempt != 2 ||
				string(got.DispatchEvent) != `{"v":1}` || got.NotificationRunID != "run-9" || got.NotificationError != "slow" ||
				got.NotificationAttemptCount != 2 || !got.NextNotificationAt.Equal(at(time.Hour)) {
				t.Errorf("the in-flight delivery was disturbed: %+v", got)
			}
		})
	}
}

// PostgresEnv names the variable holding the test Postgres URL.
const PostgresEnv = "ANTLER_TEST_POSTGRES_URL"

// PostgresURL returns the test server's URL. Without one the test is
// skipped, except in CI, which must never skip the Postgres store.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(PostgresEnv)
	switch {
	case u != "":
		return u
	case os.Getenv("CI") == "true":
		tb.Fatalf("%s is not set; CI must test the Postgres store", PostgresEnv)
	default:
		tb.Skipf("%s is not set; set it to a Postgres URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to test the Postgres store", PostgresEnv)
	}
	return ""
}

// PostgresSchema creates a fresh schema, drops it when the test ends, and
// returns base with search_path pointing at it, so tests never collide.
func PostgresSchema(tb testing.TB, base string) string {
	tb.Helper()
	var b [6]byte
	rand.Read(b[:])
	schema := "taskstore_test_" + hex.EncodeToString(b[:])

	admin, err := sql.Open("pgx", base)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if _, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close()
	})
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		tb.Fatalf("create schema: %v", err)
	}

	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("%s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func testListByUser(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	create(t, s, newTask("a"), at(0))
	create(t, s, newTask("c", func(nt *taskstore.NewTask) { nt.ThreadID = "thread-2" }), at(time.Second))
	create(t, s, newTask("b"), at(time.Second)) // same created_at as c: id breaks the tie
	create(t, s, newTask("d", func(nt *taskstore.NewTask) { nt.Status = "completed" }), at(2*time.Second))
	create(t, s, newTask("other-user", func(nt *taskstore.NewTask) { nt.UserID = "user-2" }), at(3*time.Second))

	tests := []struct {
		name  string
		user  string
		limit int
		want  []string
	}{
		{"every thread, by pages", user, 1, []string{"d", "c", "b", "a"}},
		{"pages sharing a millisecond", user, 2, []string{"d", "c", "b", "a"}},
		{"one page", user, 50, []string{"d", "c", "b", "a"}},
		{"another user", "user-2", 50, []string{"other-user"}},
		{"a user without tasks", "user-3", 50, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			var before time.Time
			var beforeID string
			for range 10 {
				page, err := s.ListByUser(ctx, tt.user, before, beforeID, tt.limit)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ids(page)...)
				if len(page) < tt.limit {
					break
				}
				before, beforeID = page[len(page)-1].CreatedAt, page[len(page)-1].ID
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ListByUser = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := s.ListByUser(ctx, user, time.Time{}, "", 0); err == nil {
		t.Error("ListByUser with limit 0: want an error")
	}
}

func testUserEvents(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	create(t, s, newTask("working"), at(0)) // no event
	create(t, s, newTask("b", func(nt *taskstore.NewTask) { nt.State = status("failed") }), at(time.Second))
	create(t, s, newTask("a", func(nt *taskstore.NewTask) {
		nt.ThreadID, nt.State = "thread-2", status("completed")
	}), at(2*time.Second))
	create(t, s, newTask("other-user", func(nt *taskstore.NewTask) {
		nt.UserID, nt.State = "user-2", status("completed")
	}), at(2*time.Second))
	tests := []struct {
		name  string
		user  string
		since time.Time
		id    string
		want  []string
	}{
		{"every thread", user, at(0), "", []string{"b", "a"}},
		{"since a time", user, at(1500 * time.Millisecond), "", []string{"a"}},
		{"after a position", user, at(time.Second), "b", []string{"a"}},
		{"another user", "user-2", at(0), "", []string{"other-user"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := s.UserEvents(ctx, tt.user, tt.since, tt.id, 10)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(evs); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("UserEvents = %v, want %v", got, tt.want)
			}
		})
	}
}
