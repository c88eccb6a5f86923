package testmcp

import (
	"slices"
	"testing"
	"time"
)

// Measure runs call b.N times (after one warm-up call, outside the timing,
// which does discovery and starts sessions) and reports ns/op, allocations
// and the p50 and p99 latencies in µs beside them.
func Measure(b *testing.B, call func()) {
	call()
	var lat []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		call()
		lat = append(lat, time.Since(start))
	}
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
