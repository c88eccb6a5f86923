package eventually

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does, and whose test deadline is near, so
// that a failing wait ends quickly.
type recorder struct {
	testing.TB
	deadline time.Time
	failed   string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Deadline() (time.Time, bool) { return r.deadline, true }

// run calls wait with a recorder on a goroutine of its own (Fatalf ends
// it) and returns the failure message, empty when the wait succeeded.
func run(t *testing.T, wait func(testing.TB)) string {
	r := &recorder{TB: t, deadline: time.Now().Add(graceBeforeTestDeadline + 100*time.Millisecond)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(r)
	}()
	<-done
	return r.failed
}

func TestWaits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		wait func(testing.TB)
		// fails is what the failure message contains; empty means the
		// wait succeeds.
		fails []string
	}{
		{
			name: "a condition that already holds returns at once",
			wait: func(tb testing.TB) { True(tb, "nothing", func() bool { return true }) },
		},
		{
			name: "a condition that comes to hold is waited for",
			wait: func(tb testing.TB) {
				var n atomic.Int32
				True(tb, "the third poll", func() bool { return n.Add(1) >= 3 })
			},
		},
		{
			name:  "a condition that never holds fails with what was awaited",
			wait:  func(tb testing.TB) { True(tb, "the task to complete", func() bool { return false }) },
			fails: []string{"timed out waiting for the task to complete"},
		},
		{
			name: "a check that never holds fails with what it last saw",
			wait: func(tb testing.TB) {
				var n int
				Check(tb, "status completed", func() (bool, string) {
					n++
					return false, fmt.Sprintf("status working after %d polls", n)
				})
			},
			fails: []string{"timed out waiting for status completed", "last seen: status working after "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := run(t, tt.wait)
			if len(tt.fails) == 0 && got != "" {
				t.Fatalf("the wait failed: %s", got)
			}
			if len(tt.fails) > 0 && got == "" {
				t.Fatal("the wait succeeded; want a failure")
			}
			for _, want := range tt.fails {
				if !strings.Contains(got, want) {
					t.Errorf("failure %q does not contain %q", got, want)
				}
			}
		})
	}
}
