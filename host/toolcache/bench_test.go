package toolcache_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/host/toolcache"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// BenchmarkSnapshotHotPath is a read of the tool set when the config file has
// not changed: resolve the path, stat and hash a 16 KiB file, compare.
// Budget (DESIGN.md): ≤ 20 µs.
func BenchmarkSnapshotHotPath(b *testing.B) {
	var servers []string
	for i := 0; len(strings.Join(servers, ",")) < 16<<10; i++ {
		servers = append(servers, fmt.Sprintf(`"s%03d": {"enabled": false, "command": "npx", "args": ["-y", "@example/server-%03d"], "description": "padding server %03d"}`, i, i, i))
	}
	path := filepath.Join(b.TempDir(), "extensions_config.json")
	doc := `{"mcpServers": {` + strings.Join(servers, ",") + `}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		b.Fatal(err)
	}
	c := toolcache.New(toolcache.Options{ConfigPath: path})
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Load(ctx); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiscovery10Slow discovers 10 stdio servers that each take 300 ms
// to answer initialize. Concurrent discovery should take about 300 ms, not 3 s.
func BenchmarkDiscovery10Slow(b *testing.B) {
	bin := testmcp.Build(b)
	var servers []string
	for i := range 10 {
		servers = append(servers, fmt.Sprintf(`"s%d": {"command": %q, "args": ["-init-delay", "300ms"]}`, i, bin))
	}
	path := filepath.Join(b.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {`+strings.Join(servers, ",")+`}}`), 0o600); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c := toolcache.New(toolcache.Options{ConfigPath: path})
		s, err := c.Load(context.Background())
		if err != nil || len(s.Tools) != 80 {
			b.Fatalf("load: %v (%d tools)", err, len(s.Tools))
		}
		b.StopTimer()
		c.Close()
		b.StartTimer()
	}
}
