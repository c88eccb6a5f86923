package toolcache_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// escapeScript is a stdio MCP server (the demo server, run by perl) whose
// direct child leaves the process group Antler started it in (it joins
// the group of a process it forked) and outlives its stdin: a kill of the
// group it was started in reaches nobody.
const escapeScript = `
exec(@ARGV) unless $ENV{ANTLER_THREAD_WORKSPACE}; # discovery: a plain server
my $g = fork();
die "fork: $!" unless defined $g;
if ($g == 0) { setpgrp(0, 0); sleep 3600 while 1; exit 0; }
setpgrp($g, $g) or die "setpgrp child: $!";
setpgrp(0, $g) or die "setpgrp self: $!";
system(@ARGV);
sleep 3600 while 1;
`

// TestAChildThatLeavesItsGroupIsStillKilled: a closed session's place is
// held until its Close returns, and Close waited for the child forever
// when the child had left its process group, so each such session shrank
// the pool by one for good. With a pool of one place, mallory's session on
// such a server (a pooled session's child; discovery's is a plain server)
// is evicted for alice's, and alice's call gets the place once the child
// itself is killed.
func TestAChildThatLeavesItsGroupIsStillKilled(t *testing.T) {
	t.Parallel()
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("no perl")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "escape.pl")
	if err := os.WriteFile(script, []byte(escapeScript), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, path: filepath.Join(dir, "extensions_config.json")}
	b.write(doc(`"esc": ` + stdio(perl, `"session_init_timeout": 15`, script, testmcp.Build(t))))
	b.cache = toolcache.New(toolcache.Options{ConfigPath: b.path, DataDir: t.TempDir(), MaxSessions: 1,
		Lookup: func(string) (string, bool) { return "", false }})
	t.Cleanup(b.cache.Close)
	// Runs before the cache's Close (which would wait for the hung owner).
	t.Cleanup(func() { killRunning(t, script) })
	s := b.snap()

	call := func(user string) error {
		a, _ := json.Marshal(map[string]any{"message": "hi"})
		_, err := s.Invoke(context.Background(), dispatch.Request{Name: "esc_echo", Arguments: a, UserID: user, ThreadID: "t"})
		return err
	}
	if err := call("mallory"); err != nil {
		t.Fatalf("mallory: %v", err)
	}
	// The pool is full with mallory's idle session: alice's call evicts it,
	// and waits for its Close, which never returns.
	if err := call("alice"); err != nil {
		t.Errorf("alice, once mallory's idle session was evicted for her: %v (its Close never returned, so its place was never given back)", err)
	}
	t.Logf("processes of the script still alive: %d", countRunning(script))
}

func countRunning(path string) int {
	n := 0
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if cmdline, err := os.ReadFile(p); err == nil && bytes.Contains(cmdline, []byte(path)) {
			n++
		}
	}
	return n
}

// killRunning kills the processes whose command line names path (this
// test's own script).
func killRunning(t *testing.T, path string) {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if cmdline, err := os.ReadFile(p); err == nil && bytes.Contains(cmdline, []byte(path)) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}
