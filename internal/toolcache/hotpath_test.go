package toolcache_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/toolcache"
)

// failing is a server entry whose discovery fails at once (no such binary),
// so a rebuild costs no process; its name tells the snapshots apart.
func failing(name string) string {
	return fmt.Sprintf(`%q: {"command": "/nonexistent/antler-no-such-binary"}`, name)
}

func hasServer(s *toolcache.ToolSet, name string) bool {
	for _, st := range s.ServerStatuses() {
		if st.Name == name {
			return true
		}
	}
	return false
}

// TestRehashDoesNotBlockOtherReads: while one read re-hashes the file
// because the clock says a re-hash is due, other reads get the current
// snapshot without waiting, and an edit (a changed identity) is served to
// the read that sees it without waiting for that re-hash either. The
// re-hash, finding other content when released, goes the ordinary path and
// returns the edited tools.
func TestRehashDoesNotBlockOtherReads(t *testing.T) {
	b := newBundle(t, doc(failing("before")))
	// An hour ahead: every read finds its revision over 1 s old.
	toolcache.SetClock(b.cache, func() time.Time { return time.Now().Add(time.Hour) })
	entered, release := make(chan struct{}), make(chan struct{})
	var rehashes atomic.Int32
	toolcache.OnRehash(b.cache, func() {
		if rehashes.Add(1) == 1 {
			close(entered)
			<-release
		}
	})
	s1 := b.snap()
	if !hasServer(s1, "before") {
		t.Fatalf("servers %+v", s1.ServerStatuses())
	}

	blocked := make(chan *toolcache.ToolSet, 1)
	go func() {
		s, err := b.cache.ToolSet(context.Background())
		if err != nil {
			t.Errorf("the re-hashing read: %v", err)
		}
		blocked <- s
	}()
	select {
	case <-entered:
	case <-time.After(60 * time.Second):
		t.Fatal("no read started a re-hash") // a guard against hanging, not a timing assertion
	}
	for i := range 3 {
		if s := b.snap(); s != s1 {
			t.Fatalf("read %d during the re-hash got another snapshot", i)
		}
	}

	b.write(doc(failing("after-the-edit")))
	s2 := b.snap()
	if s2 == s1 || !hasServer(s2, "after-the-edit") {
		t.Fatalf("the edit was not served during the re-hash: servers %+v", s2.ServerStatuses())
	}

	close(release)
	if s := <-blocked; s != s2 {
		t.Errorf("the re-hashing read returned %p, want the edited snapshot %p", s, s2)
	}
	if s := b.snap(); s != s2 {
		t.Error("a read after the re-hash rebuilt again")
	}
}

// TestConcurrentReadsDuringEdits (run it with -race): many goroutines read
// the tools while the file is edited. Each edit changes the file's size, so
// the writer's next read must serve it: a new snapshot for an MCP edit, the
// same one for an edit elsewhere (skills), which keeps tools and
// connections.
func TestConcurrentReadsDuringEdits(t *testing.T) {
	b := newBundle(t, doc(failing("s")))
	prev := b.snap()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				s, err := b.cache.ToolSet(context.Background())
				if err != nil || s == nil {
					t.Errorf("concurrent read: %v", err)
					return
				}
				reads.Add(1)
			}
		})
	}
	for i := range 20 {
		name := strings.Repeat("s", i+2) // a new size on every edit
		if i%2 == 0 {
			b.write(doc(failing(name)))
			s := b.snap()
			if s == prev || !hasServer(s, name) {
				t.Fatalf("edit %d: the MCP edit to %q was not served (servers %+v)", i, name, s.ServerStatuses())
			}
			prev = s
			continue
		}
		server := prev.ServerStatuses()[0].Name
		b.write(`{"mcpServers": {` + failing(server) + `}, "skills": {"` + name + `": {"enabled": false}}}`)
		if s := b.snap(); s != prev {
			t.Fatalf("edit %d: a skills-only edit rebuilt the tools", i)
		}
	}
	close(stop)
	wg.Wait()
	if reads.Load() == 0 {
		t.Error("no concurrent read ran")
	}
}
