package toolcache_test

import (
	"context"
	"encoding/json"
	"github.com/antler-mcp/antler/internal/eventually"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// pooledBundle is a bundle whose cache pins stdio servers to thread
// workspaces under a data dir.
func pooledBundle(t *testing.T, doc string) (*bundle, string) {
	t.Helper()
	data := t.TempDir()
	b := &bundle{t: t, path: filepath.Join(t.TempDir(), "extensions_config.json")}
	b.write(doc)
	b.cache = toolcache.New(toolcache.Options{ConfigPath: b.path, DataDir: data, Lookup: func(string) (string, bool) { return "", false }})
	t.Cleanup(b.cache.Close)
	return b, data
}

func TestSessionsArePerUserAndThread(t *testing.T) {
	b, data := pooledBundle(t, doc(`"fs": `+stdio(testmcp.Build(t), "")))
	s := b.snap()
	alice1 := whoamiAs(t, s, "fs_whoami", "alice", "t1")
	if again := whoamiAs(t, s, "fs_whoami", "alice", "t1"); again.PID != alice1.PID {
		t.Errorf("same scope, pid %d then %d", alice1.PID, again.PID)
	}
	alice2 := whoamiAs(t, s, "fs_whoami", "alice", "t2")
	bob1 := whoamiAs(t, s, "fs_whoami", "bob", "t1")
	if alice2.PID == alice1.PID || bob1.PID == alice1.PID || bob1.PID == alice2.PID {
		t.Errorf("pids alice/t1 %d, alice/t2 %d, bob/t1 %d: want three processes", alice1.PID, alice2.PID, bob1.PID)
	}
	want := filepath.Join(data, "users", "alice", "threads", "t1", "user-data", "workspace")
	// The answer names host paths; only those inside alice/t1's user data
	// read /mnt/user-data/... (any other folder would show as it is).
	if alice1.Cwd != "/mnt/user-data/workspace" {
		t.Errorf("cwd %q, want the thread workspace %q as the agent sees it", alice1.Cwd, want)
	}
	tmp := filepath.Join(want, ".mcp", "tmp")
	for _, k := range []string{"TMPDIR", "TMP", "TEMP"} {
		if alice1.Env[k] != "/mnt/user-data/workspace/.mcp/tmp" {
			t.Errorf("%s = %q, want %q as the agent sees it", k, alice1.Env[k], tmp)
		}
	}
	if got := alice1.Env[dispatch.WorkspaceEnv]; got != "/mnt/user-data/workspace" {
		t.Errorf("%s = %q, want the thread workspace %q as the agent sees it", dispatch.WorkspaceEnv, got, want)
	}
	if st, err := os.Stat(tmp); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("tmp dir %v, %v: want mode 0700", st, err)
	}
	if st := status(t, s, "fs"); st.Sessions != 3 {
		t.Errorf("sessions = %d, want 3", st.Sessions)
	}
}

func TestOperatorCwdAndTmpdirWin(t *testing.T) {
	cwd := t.TempDir()
	b, _ := pooledBundle(t, doc(`"fs": `+stdio(testmcp.Build(t), `"cwd": "`+cwd+`", "env": {"TMPDIR": "/operator/tmp", "ANTLER_THREAD_WORKSPACE": "/operator/ws"}`)))
	id := whoamiAs(t, b.snap(), "fs_whoami", "alice", "t1")
	if id.Cwd != cwd || id.Env["TMPDIR"] != "/operator/tmp" || id.Env[dispatch.WorkspaceEnv] != "/operator/ws" {
		t.Errorf("cwd %q TMPDIR %q %s %q: the operator's settings must win", id.Cwd, id.Env["TMPDIR"], dispatch.WorkspaceEnv, id.Env[dispatch.WorkspaceEnv])
	}
	if id.Env["TMP"] == "" || id.Env["TMP"] == "/operator/tmp" {
		t.Errorf("TMP %q: unset by the operator, so the workspace's", id.Env["TMP"])
	}
}

func TestChildThatExitsIsEvictedWithoutAFailedCall(t *testing.T) {
	b, _ := pooledBundle(t, doc(`"fs": `+stdio(testmcp.Build(t), "")))
	s := b.snap()
	pid := whoamiAs(t, s, "fs_whoami", "alice", "t1").PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the dead session to be evicted", func() bool { return status(t, s, "fs").Sessions == 0 })
	if got := whoamiAs(t, s, "fs_whoami", "alice", "t1").PID; got == pid {
		t.Error("the next call reused the dead process")
	}
}

func TestCrashFailsOnlyThatCallAndThatScope(t *testing.T) {
	b, _ := pooledBundle(t, doc(`"fs": `+stdio(testmcp.Build(t), "")))
	s := b.snap()
	alice := whoamiAs(t, s, "fs_whoami", "alice", "t1").PID
	bob := whoamiAs(t, s, "fs_whoami", "bob", "t1").PID
	if _, err := s.Invoke(context.Background(), dispatch.Request{Name: "fs_exit", Arguments: json.RawMessage(`{"code": 3}`), UserID: "alice", ThreadID: "t1"}); err == nil {
		t.Fatal("the call that crashed its server succeeded")
	}
	if got := whoamiAs(t, s, "fs_whoami", "alice", "t1").PID; got == alice {
		t.Error("alice's next call reused the crashed process")
	}
	if got := whoamiAs(t, s, "fs_whoami", "bob", "t1").PID; got != bob {
		t.Errorf("bob's session was disturbed by alice's crash: pid %d, was %d", got, bob)
	}
}

func TestConfigChangeRetiresOnlyThatServersSessions(t *testing.T) {
	bin := testmcp.Build(t)
	b, _ := pooledBundle(t, doc(`"a": `+stdio(bin, ""), `"b": `+stdio(bin, "")))
	s := b.snap()
	a1 := whoamiAs(t, s, "a_whoami", "alice", "t1").PID
	b1 := whoamiAs(t, s, "b_whoami", "alice", "t1").PID
	b.write(doc(`"a": `+stdio(bin, "", "-tools", "extra"), `"b": `+stdio(bin, "")))
	s2 := b.snap()
	if got := whoamiAs(t, s2, "a_whoami", "alice", "t1").PID; got == a1 {
		t.Error("a's settings changed but its session was kept")
	}
	if got := whoamiAs(t, s2, "b_whoami", "alice", "t1").PID; got != b1 {
		t.Errorf("b's settings did not change but its session was retired: pid %d, was %d", got, b1)
	}
	b.cache.Reset()
	if got := whoamiAs(t, b.snap(), "b_whoami", "alice", "t1").PID; got == b1 {
		t.Error("a reset kept a session")
	}
}

func TestInvalidThreadIsRefused(t *testing.T) {
	b, _ := pooledBundle(t, doc(`"fs": `+stdio(testmcp.Build(t), "")))
	_, err := b.snap().Invoke(context.Background(), dispatch.Request{Name: "fs_whoami", ThreadID: "../escape"})
	if err == nil {
		t.Fatal("a thread id with .. was used")
	}
}

func TestWrittenFilesComeBackAsVirtualPaths(t *testing.T) {
	b, data := pooledBundle(t, doc(`"fs": `+stdio(testmcp.Build(t), "")))
	raw, err := b.snap().Invoke(context.Background(), dispatch.Request{
		Name: "fs_write_file", Arguments: json.RawMessage(`{"path": "reports/q3.md", "content": "hi"}`), UserID: "alice", ThreadID: "t1"})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Content []struct{ Text string }    `json:"content"`
		Meta    map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	const want = "/mnt/user-data/workspace/reports/q3.md"
	if len(res.Content) != 1 || res.Content[0].Text != want {
		t.Errorf("text %+v, want the virtual path %s (the host path must not reach the agent)", res.Content, want)
	}
	var got []string
	_ = json.Unmarshal(res.Meta["antler/changed_files"], &got)
	if len(got) != 1 || got[0] != want {
		t.Errorf("changed files %v, want [%s]", got, want)
	}
	host := filepath.Join(data, "users", "alice", "threads", "t1", "user-data", "workspace", "reports", "q3.md")
	if b, err := os.ReadFile(host); err != nil || string(b) != "hi" {
		t.Errorf("the file is not in alice's workspace: %v", err)
	}
}
