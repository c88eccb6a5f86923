package toolcache_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// BenchmarkFourParallel144MBResults measures the host's peak RSS (VmHWM,
// reset before the calls) while four calls at once each get a 144 MB result
// from a stdio server, as one agent's read_multiple_files did. With the
// default max_result_bytes every call fails with the cap error and the peak
// stays near the baseline. ANTLER_BENCH_DEMO names a demo binary built with
// the blob tool, so the same file measures an older host.
func BenchmarkFourParallel144MBResults(b *testing.B) {
	bin := os.Getenv("ANTLER_BENCH_DEMO")
	if bin == "" {
		bin = testmcp.Build(b)
	}
	path := filepath.Join(b.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, []byte(doc(`"big": `+stdio(bin, "", "-blob"))), 0o600); err != nil {
		b.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: path, DataDir: b.TempDir()})
	b.Cleanup(cache.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, err := cache.ToolSet(ctx)
	if err != nil {
		b.Fatal(err)
	}
	const size = 144_000_000
	args := json.RawMessage(fmt.Sprintf(`{"bytes": %d}`, size))
	var failed int
	b.ResetTimer()
	for range b.N {
		baseline := resetPeakRSS(b)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i := range 4 {
			wg.Go(func() {
				// Four threads: four stdio sessions, as four agents' calls.
				_, err := s.Invoke(ctx, dispatch.Request{Name: "big_blob", Arguments: args, ThreadID: fmt.Sprintf("t%d", i)})
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		b.ReportMetric(float64(peakRSS(b))/(1<<20), "peak-RSS-MiB")
		b.ReportMetric(float64(baseline)/(1<<20), "baseline-RSS-MiB")
	}
	b.ReportMetric(float64(failed)/float64(b.N), "refused/op")
}

// resetPeakRSS resets the process's VmHWM to its current RSS and returns it.
func resetPeakRSS(b *testing.B) int64 {
	b.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS: %v", err)
	}
	return procStatus(b, "VmRSS:")
}

func peakRSS(b *testing.B) int64 { return procStatus(b, "VmHWM:") }

// procStatus reads a kB field of /proc/self/status, in bytes.
func procStatus(b *testing.B, field string) int64 {
	b.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("%s not in /proc/self/status", field)
	return 0
}
