package virtualpath_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/internal/virtualpath"
)

// changedOf returns the _meta changed-files list of a rewritten result.
func changedOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var res struct {
		Meta map[string][]string `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return res.Meta[virtualpath.MetaChangedFiles]
}

func textResult(s string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": s}}})
	return b
}

// Two calls in one workspace that overlap each list only the files their
// results name; the same writes made one call after the other are listed
// whole; calls in another workspace do not count as overlapping.
func TestCallOverlap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := newEnv(t)
	w := virtualpath.NewWatcher()
	defer w.Acquire(e.ws)()

	// A and B overlap: both snapshots of each bracket both writes.
	a := w.Begin(e.root, e.ws, e.ws)
	b := w.Begin(e.root, e.ws, e.ws)
	elsewhere := w.Begin(other.root, other.ws, other.ws)
	write(t, filepath.Join(e.ws, "a.txt"), "a")
	write(t, filepath.Join(e.ws, "a-side.log"), "a")
	write(t, filepath.Join(e.ws, "b.txt"), "b")
	write(t, filepath.Join(other.ws, "o.txt"), "o")
	gotA := a.Rewrite(textResult("Successfully wrote to a.txt"))
	gotB := b.Rewrite(textResult(fmt.Sprintf("wrote %s", filepath.Join(e.ws, "b.txt"))))
	gotO := elsewhere.Rewrite(textResult("done"))
	for _, c := range []*virtualpath.Call{a, b, elsewhere} {
		c.End()
	}
	if got := changedOf(t, gotA); !reflect.DeepEqual(got, []string{vws + "a.txt"}) {
		t.Errorf("A claims %v, want only a.txt", got)
	}
	if got := changedOf(t, gotB); !reflect.DeepEqual(got, []string{vws + "b.txt"}) {
		t.Errorf("B claims %v, want only b.txt", got)
	}
	if got := changedOf(t, gotO); !reflect.DeepEqual(got, []string{vws + "o.txt"}) {
		t.Errorf("a call in another workspace lists %v, want o.txt (it overlapped nothing there)", got)
	}

	// One after the other: every change is the call's own.
	c := w.Begin(e.root, e.ws, e.ws)
	write(t, filepath.Join(e.ws, "c1.txt"), "c")
	write(t, filepath.Join(e.ws, "c2.txt"), "c")
	gotC := c.Rewrite(textResult("done"))
	c.End()
	if got := changedOf(t, gotC); !reflect.DeepEqual(got, []string{vws + "c1.txt", vws + "c2.txt"}) {
		t.Errorf("a lone call lists %v, want both files it wrote", got)
	}
}

// A nil Call (a server without thread folders) changes nothing.
func TestNilCall(t *testing.T) {
	var c *virtualpath.Call
	raw := textResult("/tmp/x")
	if got := c.Rewrite(raw); string(got) != string(raw) || c.Text("x") != "x" {
		t.Error("nil Call rewrote something")
	}
	c.End()
}

// Calls running at once in two workspaces each list the file they wrote
// and named (whether they overlapped or not), and never another
// workspace's.
func TestCallConcurrent(t *testing.T) {
	envs := []env{newEnv(t), newEnv(t)}
	w := virtualpath.NewWatcher()
	for _, e := range envs {
		defer w.Acquire(e.ws)()
	}
	var wg sync.WaitGroup
	for i := range 16 {
		e := envs[i%2]
		wg.Go(func() {
			for j := range 10 {
				c := w.Begin(e.root, e.ws, e.ws)
				p := write(t, filepath.Join(e.ws, fmt.Sprintf("d%d", j%3), fmt.Sprintf("w%d-%d-%d.txt", i%2, i, j)), "x")
				got := changedOf(t, c.Rewrite(textResult("wrote "+p)))
				c.End()
				if want := fmt.Sprintf("%sd%d/w%d-%d-%d.txt", vws, j%3, i%2, i, j); !slices.Contains(got, want) {
					t.Errorf("call %d.%d lists %q, without %s", i, j, got, want)
				}
				for _, g := range got {
					if !strings.Contains(g, fmt.Sprintf("/w%d-", i%2)) {
						t.Errorf("call %d.%d lists %s", i, j, g)
					}
				}
			}
		})
	}
	wg.Wait()
	if w.Workspaces() != 2 {
		t.Fatalf("%d workspaces held", w.Workspaces())
	}
}
