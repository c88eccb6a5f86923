package toolcache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// inotifyWatches counts this process's inotify instances and their watches
// (from /proc/self/fdinfo).
func inotifyWatches(t *testing.T) (instances, watches int) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	for _, fd := range fds {
		if link, _ := os.Readlink("/proc/self/fd/" + fd.Name()); link != "anon_inode:inotify" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			continue
		}
		instances++
		watches += strings.Count(string(info), "inotify wd:")
	}
	return instances, watches
}

// Stdio sessions hold their thread's workspace watches: calls of two
// threads and two servers share one inotify instance, and closing the
// sessions (retired threads, then the cache) leaves no instance and no
// watch behind. Not parallel: it counts the process's watches.
func TestSessionsReleaseWatches(t *testing.T) {
	bin := testmcp.Build(t)
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, []byte(doc(`"fs": `+stdio(bin, ""), `"fs2": `+stdio(bin, ""))), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	baseInstances, baseWatches := inotifyWatches(t)
	cache := toolcache.New(toolcache.Options{ConfigPath: path, DataDir: data})
	defer cache.Close()
	s, err := cache.ToolSet(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	write := func(tool, thread, file string) []string {
		t.Helper()
		raw, err := s.Invoke(context.Background(), dispatch.Request{Name: tool,
			Arguments: json.RawMessage(fmt.Sprintf(`{"path": %q, "content": "x", "reply": "done"}`, file)), UserID: "alice", ThreadID: thread})
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		var list []string
		_ = json.Unmarshal(res.Meta["antler/changed_files"], &list)
		return list
	}
	for _, c := range []struct{ tool, thread, file string }{
		{"fs_write_file", "t1", "a/one.txt"},
		{"fs2_write_file", "t1", "a/b/two.txt"},
		{"fs_write_file", "t2", "three.txt"},
		{"fs_write_file", "t1", "a/b/four.txt"},
	} {
		if got, want := write(c.tool, c.thread, c.file), []string{"/mnt/user-data/workspace/" + c.file}; !slices.Equal(got, want) {
			t.Fatalf("%s in %s lists %q, want %q", c.tool, c.thread, got, want)
		}
	}
	instances, watches := inotifyWatches(t)
	// t1: the workspace, a and a/b (its .mcp is not watched); t2: the workspace.
	if instances != baseInstances+1 || watches != baseWatches+4 {
		t.Fatalf("%d instances with %d watches, want %d with %d", instances, watches, baseInstances+1, baseWatches+4)
	}
	cache.RetireThread("t1")
	cache.RetireThread("t2")
	cache.Close() // waits for the sessions to be closed
	// The last workspace's release closes the instance from a goroutine of
	// its own (the close waits for the queue's reader), so it goes soon
	// after, not at once.
	eventually.True(t, fmt.Sprintf("no instance and no watch left but the %d and %d of before", baseInstances, baseWatches), func() bool {
		instances, watches := inotifyWatches(t)
		return instances == baseInstances && watches == baseWatches
	})
}
