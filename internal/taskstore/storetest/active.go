package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// testHasActive: only a non-terminal task of the same server, user and
// thread pins a session; a cancellation that has not ended still does.
func testHasActive(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	if ok, err := s.HasActive(ctx, "reports", task.Scope{User: user, Thread: thread}); err != nil || ok {
		t.Fatalf("empty store: %v, %v; want false", ok, err)
	}
	create(t, s, newTask("running"), at(0))
	create(t, s, newTask("done", func(nt *taskstore.NewTask) { nt.ThreadID, nt.State = "thread-done", status("completed") }), at(0))
	create(t, s, newTask("asking", func(nt *taskstore.NewTask) { nt.ThreadID, nt.State = "thread-asking", status("input_required") }), at(0))
	create(t, s, newTask("cancelling", func(nt *taskstore.NewTask) { nt.ThreadID = "thread-cancelling" }), at(0))
	if _, err := s.RequestCancel(ctx, "cancelling", task.Scope{User: user, Thread: "thread-cancelling"}, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                 string
		server, user, thread string
		want                 bool
	}{
		{"a running task", "reports", user, thread, true},
		{"another server", "other", user, thread, false},
		{"another user", "reports", "user-2", thread, false},
		{"another thread", "reports", user, "thread-2", false},
		{"a completed task", "reports", user, "thread-done", false},
		{"a task waiting for input", "reports", user, "thread-asking", true},
		{"a cancellation in progress", "reports", user, "thread-cancelling", true},
	}
	for _, tt := range tests {
		if ok, err := s.HasActive(ctx, tt.server, task.Scope{User: tt.user, Thread: tt.thread}); err != nil || ok != tt.want {
			t.Errorf("%s: HasActive = %v, %v; want %v", tt.name, ok, err, tt.want)
		}
	}
}
