package virtualpath_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/antler-mcp/antler/host/virtualpath"
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
				before := virtualpath.Snapshot(e.ws)
				virtualpath.RewriteResult(raw, virtualpath.NewTranslator(e.root, e.ws, nil), virtualpath.Changed(e.ws, before))
			}
		})
	}
}
