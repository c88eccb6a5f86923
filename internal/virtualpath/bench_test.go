package virtualpath_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/virtualpath"
)

// BenchmarkCall is the changed-file report of one call that writes
// nothing, in a workspace of 0, 1,000 or 10,000 files (100 to a folder):
// "watch" as calls make it (a Watcher held as a session holds it), "walk"
// the two snapshots it replaced and still falls back to.
func BenchmarkCall(b *testing.B) {
	raw := textResult("done")
	for _, files := range []int{0, 1000, 10000} {
		e := newEnv(b)
		for i := range files {
			dir := filepath.Join(e.ws, "d"+strconv.Itoa(i/100))
			if i%100 == 0 {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					b.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("watch/files=%d", files), func(b *testing.B) {
			w := virtualpath.NewWatcher()
			defer w.Acquire(e.ws)()
			b.ReportAllocs()
			for b.Loop() {
				c := w.Begin(e.root, e.ws, e.ws)
				c.Rewrite(raw)
				c.End()
			}
		})
		b.Run(fmt.Sprintf("walk/files=%d", files), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				before := virtualpath.Scan(e.ws)
				virtualpath.RewriteResult(raw, virtualpath.NewTranslator(e.root, e.ws, nil), virtualpath.Changed(e.ws, before))
			}
		})
	}
}

// BenchmarkCallBesideMovingTree is BenchmarkCall's empty workspace while
// an agent in another workspace of the same Watcher moves a tree of 19,000
// folders out and back in, call after call: the other workspace's calls
// must not pay for its watches. p999-ns and max-ns are the 99.9th
// percentile and the slowest call.
func BenchmarkCallBesideMovingTree(b *testing.B) {
	a, e := newEnv(b), newEnv(b)
	tree, away := filepath.Join(a.ws, "tree"), filepath.Join(a.outside, "tree")
	for i := range 19000 {
		if err := os.MkdirAll(filepath.Join(tree, strconv.Itoa(i/100), strconv.Itoa(i%100)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	w := virtualpath.NewWatcher()
	defer w.Acquire(a.ws)()
	defer w.Acquire(e.ws)()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c := w.Begin(a.root, a.ws, a.ws)
			_ = os.Rename(tree, away)
			_ = os.Rename(away, tree)
			c.Rewrite(textResult("done"))
			c.End()
		}
	}()
	raw := textResult("done")
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		c := w.Begin(e.root, e.ws, e.ws)
		c.Rewrite(raw)
		c.End()
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*999/1000]), "p999-ns")
	b.ReportMetric(float64(took[len(took)-1]), "max-ns")
	close(stop)
	<-stopped
}
