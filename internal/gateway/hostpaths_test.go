package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/internal/virtualpath"
)

const vws = virtualpath.Prefix + "/workspace"

// pooledAPI serves one stdio server, started per thread in its workspace
// under a fresh data folder, and returns the API and the data folder
// (symlinks resolved, as the servers see it).
func pooledAPI(t *testing.T, server string) (*api, string) {
	t.Helper()
	data, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, `{"mcpServers": {`+server+`}}`), DataDir: data})
	t.Cleanup(cache.Close)
	srv := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(nil)}).Handler())
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL}, data
}

// structured returns a result's structuredContent.content string.
func structured(res map[string]any) string {
	sc, _ := res["structuredContent"].(map[string]any)
	s, _ := sc["content"].(string)
	return s
}

func changedFiles(res map[string]any) []string {
	meta, _ := res["_meta"].(map[string]any)
	var out []string
	list, _ := meta[virtualpath.MetaChangedFiles].([]any)
	for _, v := range list {
		out = append(out, v.(string))
	}
	return out
}

// The official filesystem server's answers name host paths in text, in
// structuredContent, for directories, for files that do not exist and in
// its error texts; every one reaches the agent as /mnt/user-data/..., and
// no byte of any answer holds the host's data folder.
func TestFilesystemAnswersCarryNoHostPaths(t *testing.T) {
	t.Parallel()
	index := testnpm.Filesystem(t)
	a, data := pooledAPI(t, fmt.Sprintf(`"fs": {"command": "node", "args": [%q, "."]}`, index))
	call := func(tool, args string) map[string]any {
		t.Helper()
		code, res := a.do("POST", "/api/mcp/tools/fs_"+tool+"/call", `{"arguments": `+args+`, "thread_id": "t1"}`)
		if code != 200 {
			t.Fatalf("%s: %d %v", tool, code, res)
		}
		if b, _ := json.Marshal(res); strings.Contains(string(b), data) {
			t.Errorf("%s: a host path reached the agent: %s", tool, b)
		}
		return res
	}
	call("write_file", `{"path": "notes.txt", "content": "hello"}`)
	call("create_directory", `{"path": "sub/deeper"}`)

	tests := []struct {
		name, tool, args string
		isError          bool
		want             []string // in the text and in structuredContent
	}{
		{"search_files names a file and a directory", "search_files", `{"path": ".", "pattern": "**/*e*"}`, false,
			[]string{vws + "/notes.txt", vws + "/sub/deeper"}},
		{"allowed directories", "list_allowed_directories", `{}`, false, []string{"Allowed directories:\n" + vws}},
		{"a missing file's error", "read_text_file", `{"path": "gone/missing.txt"}`, true,
			[]string{vws + "/gone/missing.txt"}},
		{"a refused path's error names the allowed directory", "read_text_file", `{"path": "/etc/hostname"}`, true,
			[]string{"not in " + vws}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(tt.tool, tt.args)
			if (res["isError"] == true) != tt.isError {
				t.Fatalf("isError %v: %v", res["isError"], res)
			}
			for _, w := range tt.want {
				if !strings.Contains(text(res), w) {
					t.Errorf("text %q lacks %q", text(res), w)
				}
				if !tt.isError && !strings.Contains(structured(res), w) {
					t.Errorf("structuredContent %q lacks %q", structured(res), w)
				}
			}
		})
	}
}

// The demo server writes files under names of its choosing and answers
// with text of its choosing: ordinary words that happen to be a changed
// file's name stay words, a real file name becomes its path, and a JSON-RPC
// error naming a host path reaches the agent translated.
func TestDemoAnswersKeepWordsAndHidePaths(t *testing.T) {
	t.Parallel()
	a, data := pooledAPI(t, fmt.Sprintf(`"demo": {"command": %q}`, testmcp.Build(t)))
	tests := []struct {
		name, args string
		wantText   string
		wantFiles  []string
		isError    bool
	}{
		{"a word-like file name is not rewritten", `{"path": "slept 3000ms", "content": "x", "reply": "slept 3000ms"}`,
			"slept 3000ms", []string{vws + "/slept 3000ms"}, false},
		{"a file name is", `{"path": "out/report.md", "content": "x", "reply": "Saved report.md."}`,
			"Saved " + vws + "/out/report.md.", []string{vws + "/out/report.md"}, false},
		{"the absolute path is", `{"path": "a.txt", "content": "x"}`,
			vws + "/a.txt", []string{vws + "/a.txt"}, false},
		{"a JSON-RPC error's path is", `{"path": "x/y.txt", "content": "x", "rpc_error": true}`,
			"MCP server 'demo' returned an error for tool 'write_file': refusing to write " + vws + "/x/y.txt", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, res := a.do("POST", "/api/mcp/tools/demo_write_file/call", `{"arguments": `+tt.args+`, "thread_id": "t1"}`)
			if code != 200 || (res["isError"] == true) != tt.isError || text(res) != tt.wantText {
				t.Fatalf("%d %v, want text %q", code, res, tt.wantText)
			}
			if got := changedFiles(res); !reflect.DeepEqual(got, tt.wantFiles) {
				t.Errorf("changed_files %v, want %v", got, tt.wantFiles)
			}
			if b, _ := json.Marshal(res); strings.Contains(string(b), data) {
				t.Errorf("a host path reached the agent: %s", b)
			}
		})
	}
	code, res := a.do("POST", "/api/mcp/tools/demo_sleep/call", `{"arguments": {"ms": 1}, "thread_id": "t1"}`)
	if code != 200 || text(res) != "slept 1ms" {
		t.Errorf("sleep: %d %v", code, res)
	}
}

// Two real calls in one thread's workspace that are certain to overlap
// (each waits inside the server until both have arrived and both have
// written) each list only the file their own answer names; answers that
// name nothing claim nothing; a call alone lists everything it wrote.
func TestConcurrentCallsClaimOnlyTheirOwnFiles(t *testing.T) {
	t.Parallel()
	a, _ := pooledAPI(t, fmt.Sprintf(`"demo": {"command": %q}`, testmcp.Build(t)))
	together := func(group string, replies [2]string) [2]map[string]any {
		var out [2]map[string]any
		var wg sync.WaitGroup
		for i, name := range []string{group + "-a.txt", group + "-b.txt"} {
			wg.Go(func() {
				args := map[string]any{"path": name, "content": "x", "group": group, "parties": 2}
				if replies[i] != "" {
					args["reply"] = replies[i]
				}
				b, _ := json.Marshal(map[string]any{"arguments": args, "thread_id": "t1"})
				code, res := a.do("POST", "/api/mcp/tools/demo_write_file/call", string(b))
				if code != 200 || res["isError"] == true {
					t.Errorf("call %s: %d %v", name, code, res)
				}
				out[i] = res
			})
		}
		wg.Wait()
		return out
	}

	res := together("g1", [2]string{"", ""})
	for i, own := range []string{vws + "/g1-a.txt", vws + "/g1-b.txt"} {
		if got := changedFiles(res[i]); !reflect.DeepEqual(got, []string{own}) {
			t.Errorf("call %d lists %v, want only %s", i, got, own)
		}
	}
	res = together("g2", [2]string{"done", "done"})
	for i := range res {
		if got := changedFiles(res[i]); len(got) != 0 {
			t.Errorf("call %d, whose answer names no file, claims %v", i, got)
		}
	}
	code, alone := a.do("POST", "/api/mcp/tools/demo_write_file/call", `{"arguments": {"path": "solo.txt", "content": "x", "reply": "done"}, "thread_id": "t1"}`)
	if got := changedFiles(alone); code != 200 || !reflect.DeepEqual(got, []string{vws + "/solo.txt"}) {
		t.Errorf("a call alone lists %v (%d), want solo.txt", got, code)
	}
}
