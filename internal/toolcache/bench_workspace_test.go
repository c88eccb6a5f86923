package toolcache_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// BenchmarkStdioCallWorkspace is one echo call to the demo server over a
// pooled stdio session, the whole call path (chain, lease, changed-file
// report, translation), with the thread's workspace holding 0, 1,000 or
// 10,000 files (100 to a folder). The changed-file report should not cost
// more with more files.
func BenchmarkStdioCallWorkspace(b *testing.B) {
	bin := testmcp.Build(b)
	path := filepath.Join(b.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, []byte(doc(`"demo": `+stdio(bin, ""))), 0o600); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"message":"benchmark"}`)
	for _, files := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			data := b.TempDir()
			ws := filepath.Join(data, "users", "default", "threads", "bench", "user-data", "workspace")
			for i := range files {
				dir := filepath.Join(ws, "d"+strconv.Itoa(i/100))
				if i%100 == 0 {
					if err := os.MkdirAll(dir, 0o755); err != nil {
						b.Fatal(err)
					}
				}
				if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)+".txt"), []byte("x"), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			cache := toolcache.New(toolcache.Options{ConfigPath: path, DataDir: data})
			defer cache.Close()
			s, err := cache.ToolSet(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			testmcp.Measure(b, func() {
				if _, err := s.Invoke(context.Background(), dispatch.Request{Name: "demo_echo", Arguments: args, ThreadID: "bench"}); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
