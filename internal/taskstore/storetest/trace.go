package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/taskstore"
)

// testTraceParent: the submitting call's traceparent is stored at create
// and read back by Get and by the poll claim (what a restarted host links
// its poll traces from); a task without one reads "", and one wider than
// the column is refused on both engines alike.
func testTraceParent(t *testing.T, s *taskstore.Store) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	create(t, s, newTask("traced", func(nt *taskstore.NewTask) { nt.TraceParent = parent }), at(0))
	create(t, s, newTask("untraced"), at(0))
	if got := get(t, s, "traced").TraceParent; got != parent {
		t.Errorf("Get: TraceParent = %q, want %q", got, parent)
	}
	if got := get(t, s, "untraced").TraceParent; got != "" {
		t.Errorf("Get of a task created without one: TraceParent = %q, want empty", got)
	}
	claimed := map[string]string{}
	for _, task := range claimDue(t, s, at(0), "owner-a", 10) {
		claimed[task.ID] = task.TraceParent
	}
	if claimed["traced"] != parent || claimed["untraced"] != "" {
		t.Errorf("ClaimDue: trace parents = %v, want traced=%q and untraced empty", claimed, parent)
	}
	wide := newTask("wide", func(nt *taskstore.NewTask) { nt.TraceParent = strings.Repeat("0", 65) })
	if _, err := s.Create(context.Background(), wide, at(0)); err == nil {
		t.Error("Create with a 65-character trace parent succeeded, want it refused")
	}
}
