package toolcache_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// bigResult is far above the cap the tests configure (capBytes): the host
// must never allocate anything like it.
const (
	bigResult = 64 << 20
	capBytes  = 1 << 20
)

// allocated returns how many bytes the process allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// callTool invokes an exposed tool as the default user.
func callTool(s *toolcache.ToolSet, name, args string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return s.Invoke(ctx, dispatch.Request{Name: name, Arguments: json.RawMessage(args)})
}

// The attack: a tool answers with 64 MiB over each transport while the
// server's max_result_bytes is 1 MiB. The call fails with the model-safe cap
// error, the host allocates far less than the result while reading it, and
// the same session answers the next, small call. A result just under the
// cap is the legitimate use and arrives whole.
func TestResultAboveMaxResultBytesIsRefusedWhileRead(t *testing.T) {
	bin := testmcp.Build(t)
	httpURL := testmcp.StartHTTP(t, "http", "-blob")
	sseURL := testmcp.StartHTTP(t, "sse", "-blob")
	capField := fmt.Sprintf(`"max_result_bytes": %d`, capBytes)
	b := newBundle(t, doc(
		`"local": `+stdio(bin, capField, "-blob"),
		`"remote": {"type": "http", "url": "`+httpURL+`/mcp", `+capField+`}`,
		`"legacy": {"type": "sse", "url": "`+sseURL+`/sse", `+capField+`}`,
	))
	s := b.snap()
	for _, server := range []string{"local", "remote", "legacy"} {
		t.Run(server, func(t *testing.T) {
			whole, err := callTool(s, server+"_blob", fmt.Sprintf(`{"bytes": %d}`, capBytes/2))
			if err != nil {
				t.Fatalf("a result under the cap failed: %v", err)
			}
			if len(whole) < capBytes/2 {
				t.Fatalf("result under the cap is %d bytes", len(whole))
			}
			before := whoami(t, s, server+"_whoami")

			var callErr error
			n := allocated(func() {
				_, callErr = callTool(s, server+"_blob", fmt.Sprintf(`{"bytes": %d}`, bigResult))
			})
			var ce *dispatch.CallError
			if !errors.As(callErr, &ce) {
				t.Fatalf("oversize call: got %v, want a *CallError", callErr)
			}
			want := fmt.Sprintf("MCP tool 'blob' on server '%s' returned a result larger than the %d-byte limit (max_result_bytes)", server, capBytes)
			if !strings.Contains(ce.Message, want) {
				t.Errorf("message %q, want it to contain %q", ce.Message, want)
			}
			// Reading 64 MiB through a 1 MiB cap may cost a few copies of
			// the cap, never the result.
			if n > 16<<20 {
				t.Errorf("the host allocated %d MiB while a %d MiB result was refused at %d MiB", n>>20, bigResult>>20, capBytes>>20)
			}
			t.Logf("allocated %.1f MiB for a %d MiB result capped at %d MiB", float64(n)/(1<<20), bigResult>>20, capBytes>>20)

			if after := whoami(t, s, server+"_whoami"); after != before {
				t.Errorf("the session did not survive: whoami pid %d, then %d", before, after)
			}
		})
	}
}

// server-filesystem's read_multiple_files, the call that took a host to
// 2.7 GB, is refused at the host default when the server sets no cap.
func TestFilesystemReadMultipleFilesAboveTheHostDefault(t *testing.T) {
	index := testnpm.Filesystem(t)
	dir := t.TempDir()
	var paths []string
	for i := range 4 {
		p := filepath.Join(dir, fmt.Sprintf("f%d.txt", i))
		if err := os.WriteFile(p, []byte(strings.Repeat("0123456789abcdef\n", 1<<15)), 0o600); err != nil { // 557 KB each
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`{"mcpServers": {"fs": {"command": "node", "args": [%q, %q]}}}`, index, dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path, MaxResultBytes: 2 << 20})
	t.Cleanup(cache.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := cache.ToolSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(map[string]any{"paths": paths})
	_, err = callTool(s, "fs_read_multiple_files", string(all))
	var ce *dispatch.CallError
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "larger than the 2097152-byte limit (max_result_bytes)") {
		t.Fatalf("reading 2.2 MB (twice: text and structuredContent) with a 2 MiB host cap: got %v", err)
	}
	one, _ := json.Marshal(map[string]any{"paths": paths[:1]})
	if _, err := callTool(s, "fs_read_multiple_files", string(one)); err != nil {
		t.Fatalf("one file, under the cap, on the same session: %v", err)
	}
}

// countingHandler counts the log records whose message contains a phrase.
type countingHandler struct {
	slog.Handler
	phrase string
	n      *atomic.Int64
}

func (countingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.phrase) {
		h.n.Add(1)
	}
	return nil
}

// A config file edited to above config.MaxFileSize is refused by its size:
// the last good tools keep serving, the refusal is logged once for that
// revision however often the cache is read, and a good edit is picked up.
func TestOversizeConfigIsRefusedKeepingLastGood(t *testing.T) {
	bin := testmcp.Build(t)
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	good := doc(`"a": ` + stdio(bin, ""))
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	var refused atomic.Int64
	log := slog.New(countingHandler{Handler: slog.DiscardHandler, phrase: "cannot be loaded", n: &refused})
	cache := toolcache.New(toolcache.Options{ConfigPath: path, Logger: log})
	t.Cleanup(cache.Close)
	ctx := context.Background()
	s1, err := cache.ToolSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The same servers, padded past the limit: only the size is wrong.
	big := doc(`"a": `+stdio(bin, "", "-tools", "padded")) + strings.Repeat(" ", int(config.MaxFileSize))
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s, err := cache.ToolSet(ctx)
		if err != nil || s != s1 {
			t.Fatalf("an oversize edit replaced the tools: %v", err)
		}
	}
	if n := refused.Load(); n != 1 {
		t.Errorf("the oversize revision was reported %d times, want once", n)
	}
	if _, err := callTool(s1, "a_echo", `{"message": "still here"}`); err != nil {
		t.Errorf("the last good tools stopped serving: %v", err)
	}
	if err := os.WriteFile(path, []byte(doc(`"a": `+stdio(bin, "", "-tools", "fixed"))), 0o600); err != nil {
		t.Fatal(err)
	}
	s3, err := cache.ToolSet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s3.Tool("a_fixed"); !ok {
		t.Fatal("the good edit after the oversize one was not picked up")
	}
}
