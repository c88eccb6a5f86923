package loadgen

import (
	"testing"
	"time"
)

func TestCPUSampleSince(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name          string
		before, after cpuSample
		want          time.Duration
	}{
		{name: "both alive", before: cpuSample{1: 10 * ms, 2: 5 * ms}, after: cpuSample{1: 30 * ms, 2: 6 * ms}, want: 21 * ms},
		{name: "an exited process is not subtracted", before: cpuSample{1: 10 * ms, 2: 500 * ms}, after: cpuSample{1: 30 * ms}, want: 20 * ms},
		{name: "a new process counts whole", before: cpuSample{1: 10 * ms}, after: cpuSample{1: 10 * ms, 3: 7 * ms}, want: 7 * ms},
		{name: "a reused pid never counts negative", before: cpuSample{4: 90 * ms}, after: cpuSample{4: 1 * ms}, want: 0},
		{name: "nothing watched", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.after.since(tt.before); got != tt.want {
				t.Errorf("since = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i))
	}
	tests := []struct {
		sorted []time.Duration
		p      int
		want   time.Duration
	}{
		{lat, 50, 50}, {lat, 99, 99}, {lat, 100, 100}, {lat[:1], 50, 1}, {lat[:3], 50, 2}, {nil, 50, 0},
	}
	for _, tt := range tests {
		if got := percentile(tt.sorted, tt.p); got != tt.want {
			t.Errorf("percentile(%d values, %d) = %v, want %v", len(tt.sorted), tt.p, got, tt.want)
		}
	}
}

// TestCPUSampleOf: a gateway's own CPU is its pid's share of the tree's
// sample; its children's time, and a pid the sample lacks, count for nothing.
func TestCPUSampleOf(t *testing.T) {
	ms := time.Millisecond
	before := cpuSample{1: 10 * ms, 2: 100 * ms, 3: 5 * ms}
	after := cpuSample{1: 40 * ms, 2: 300 * ms, 3: 9 * ms}
	tests := []struct {
		name string
		pids []int
		want time.Duration
	}{
		{name: "the gateway alone", pids: []int{1}, want: 30 * ms},
		{name: "two roots", pids: []int{1, 3}, want: 34 * ms},
		{name: "a pid not sampled", pids: []int{7}, want: 0},
		{name: "none", want: 0},
	}
	for _, tt := range tests {
		if got := after.of(tt.pids).since(before.of(tt.pids)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := after.since(before); got != 234*ms {
		t.Errorf("the whole tree: %v, want 234ms", got)
	}
}
