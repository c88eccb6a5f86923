package toolcache_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// BenchmarkToolSetHotPath is a read of the tool set when the config file has
// not changed: resolve the path, stat and hash a 16 KiB file, compare. The
// file was just written, so within its 2 s racy window every read re-hashes
// (see BenchmarkToolSetHotPathSettled for reads that need only a stat).
// Budget: ≤ 20 µs (BENCHMARKS.md records the figure).
func BenchmarkToolSetHotPath(b *testing.B) {
	c, size := hotPathCache(b, false)
	b.SetBytes(size)
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.ToolSet(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolSetHotPathParallel is BenchmarkToolSetHotPath from
// GOMAXPROCS goroutines at once, as concurrent tool calls read it.
func BenchmarkToolSetHotPathParallel(b *testing.B) {
	c, size := hotPathCache(b, false)
	b.SetBytes(size)
	b.ReportAllocs()
	parallelToolSets(b, c)
}

// BenchmarkToolSetHotPathSettled reads a file last changed more than 2 s
// before it was hashed, the steady state: a stat per read, and a re-hash
// once a second.
func BenchmarkToolSetHotPathSettled(b *testing.B) {
	c, size := hotPathCache(b, true)
	b.Run("serial", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			if _, err := c.ToolSet(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		parallelToolSets(b, c)
	})
}

func parallelToolSets(b *testing.B, c *toolcache.Cache) {
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.ToolSet(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// hotPathCache loads a cache over a 16 KiB config of disabled servers. With
// settled, it waits out the racy window (2 s after the write) and loads
// again, so the revision the cache holds is one a stat can vouch for.
func hotPathCache(b *testing.B, settled bool) (*toolcache.Cache, int64) {
	b.Helper()
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
	b.Cleanup(c.Close)
	ctx := context.Background()
	if _, err := c.Load(ctx); err != nil {
		b.Fatal(err)
	}
	if settled {
		time.Sleep(2100 * time.Millisecond) // a benchmark's setup, not an assertion
		if _, err := c.ToolSet(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return c, int64(len(doc))
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
