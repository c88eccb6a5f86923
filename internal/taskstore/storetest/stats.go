package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// testStats: the counts by status, the degraded active tasks and the
// pending answers, as the metrics read them.
func testStats(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	st, err := s.Stats(ctx)
	if err != nil || len(st.ByStatus) != 0 || st.Degraded != 0 || st.AnswersPending != 0 {
		t.Fatalf("empty store: %+v, %v", st, err)
	}
	create(t, s, newTask("a"), at(0))
	// "a" fails its polls until its tracking is degraded.
	now := at(time.Minute)
	for range s.TrackingDegradedAfter() {
		row := claimOne(t, s, now, "owner", "a")
		if _, err := s.ReleaseClaim(ctx, taskstore.Lease{ID: "a", Owner: "owner", Token: row.LeaseToken}, now, "upstream down", now); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Hour)
	}
	create(t, s, newTask("b", func(nt *taskstore.NewTask) { nt.State = status("working") }), at(0))
	create(t, s, newTask("c", func(nt *taskstore.NewTask) { nt.State = status("completed") }), at(0))
	asking(t, s, "d")
	asking(t, s, "e")
	recordAnswer(t, s, "e", "answer-1", at(time.Second))
	st, err = s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := taskstore.Stats{ByStatus: map[task.Status]int{"submitted": 1, "working": 2, "completed": 1, "input_required": 1}, Degraded: 1, AnswersPending: 1}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
}
