package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/taskstore"
)

// testCatalog: approved and pending tool definitions per server, a newer
// pending definition replacing the older, the same one not counted twice,
// and approval (all, or named tools) promoting pending to approved.
func testCatalog(t *testing.T, s *taskstore.Store) {
	ctx := context.Background()
	entry := func(server, tool, state, fp string) taskstore.CatalogEntry {
		return taskstore.CatalogEntry{Server: server, Tool: tool, State: state, Fingerprint: fp, Definition: []byte(`{"name":"` + tool + `","v":"` + fp + `"}`), FirstSeen: at(0)}
	}
	record := func(entries ...taskstore.CatalogEntry) int {
		t.Helper()
		n, err := s.RecordCatalog(ctx, entries)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	state := func(server string) map[string]string {
		t.Helper()
		got, err := s.CatalogEntries(ctx, server)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, e := range got {
			m[e.Tool+"/"+e.State] = e.Fingerprint
		}
		return m
	}
	if n := record(entry("fs", "read", "approved", "a1"), entry("fs", "write", "approved", "b1"), entry("web", "get", "approved", "c1")); n != 0 {
		t.Errorf("approved entries counted %d as pending", n)
	}
	if n := record(entry("fs", "read", "pending", "a2"), entry("fs", "new", "pending", "n1")); n != 2 {
		t.Errorf("new pending: %d, want 2", n)
	}
	if n := record(entry("fs", "read", "pending", "a2")); n != 0 {
		t.Errorf("the same pending definition again counted %d", n)
	}
	if n := record(entry("fs", "read", "pending", "a3")); n != 1 {
		t.Errorf("a newer pending definition: %d, want 1", n)
	}
	want := map[string]string{"read/approved": "a1", "read/pending": "a3", "write/approved": "b1", "new/pending": "n1"}
	if got := state("fs"); !reflect.DeepEqual(got, want) {
		t.Fatalf("fs catalog %v, want %v", got, want)
	}
	if got, _ := s.CatalogEntries(ctx, ""); len(got) != 5 {
		t.Errorf("every server's entries: %d, want 5", len(got))
	}
	if _, err := s.RecordCatalog(ctx, []taskstore.CatalogEntry{entry("fs", "x", "maybe", "z")}); err == nil {
		t.Error("an unknown state was recorded")
	}

	approved, err := s.ApproveCatalog(ctx, "fs", []string{"read"}, "root", at(time.Minute))
	if err != nil || !reflect.DeepEqual(approved, []string{"read"}) {
		t.Fatalf("approve read: %v, %v", approved, err)
	}
	want = map[string]string{"read/approved": "a3", "write/approved": "b1", "new/pending": "n1"}
	if got := state("fs"); !reflect.DeepEqual(got, want) {
		t.Fatalf("after approving read: %v, want %v", got, want)
	}
	got, _ := s.CatalogEntries(ctx, "fs")
	for _, e := range got {
		if e.Tool == "read" && (e.DecidedBy != "root" || !e.DecidedAt.Equal(at(time.Minute))) {
			t.Errorf("approval not recorded: %+v", e)
		}
	}
	if approved, err := s.ApproveCatalog(ctx, "fs", nil, "root", at(2*time.Minute)); err != nil || !reflect.DeepEqual(approved, []string{"new"}) {
		t.Errorf("approve all: %v, %v", approved, err)
	}
	if _, err := s.ApproveCatalog(ctx, "fs", nil, "root", at(3*time.Minute)); !errors.Is(err, taskstore.ErrNothingPending) {
		t.Errorf("approve with nothing pending: %v, want ErrNothingPending", err)
	}
	if _, err := s.ApproveCatalog(ctx, "web", []string{"get"}, "root", at(3*time.Minute)); !errors.Is(err, taskstore.ErrNothingPending) {
		t.Errorf("approve an approved tool: %v, want ErrNothingPending", err)
	}
}
