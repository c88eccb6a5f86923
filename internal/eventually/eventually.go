// Package eventually is how a test waits for a condition instead of
// sleeping for a guessed duration: it polls the condition with a short
// backoff until it holds, and fails the test, saying what it waited for
// and what it last saw, once a generous deadline passes. The deadline only
// ends a hung test; it is not a timing assertion, and a test never relies
// on how long the wait took.
package eventually

import (
	"testing"
	"time"
)

// Timeout bounds every wait: long enough for a loaded machine, and a
// failure rather than a hang when the condition never holds. A test whose
// own deadline (go test -timeout) comes sooner stops waiting a little
// before it, so the failure says what was awaited instead of ending in the
// test binary's panic.
const Timeout = time.Minute

// The poll interval starts at firstPoll and doubles up to maxPoll: a
// condition that holds almost at once is seen at once, and a long wait
// does not spin.
const (
	firstPoll = time.Millisecond
	maxPoll   = 50 * time.Millisecond
)

// graceBeforeTestDeadline is how long before the test binary's own
// deadline a wait gives up, to leave time to report the failure.
const graceBeforeTestDeadline = 2 * time.Second

// True waits until cond returns true, and fails the test with what ("the
// task completed") if it has not by the deadline. cond runs on the test's
// goroutine and may be called many times.
func True(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Check(t, what, func() (bool, string) { return cond(), "" })
}

// Check waits until check reports ok, and fails the test if it has not by
// the deadline, with what it waited for and last, the latest observation
// check described ("status working"), so that a failure says how far the
// system got. check runs on the test's goroutine and may be called many
// times.
func Check(t testing.TB, what string, check func() (ok bool, last string)) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, set := d.Deadline(); set {
			end = end.Add(-graceBeforeTestDeadline)
			if end.Before(deadline) {
				deadline = end
			}
		}
	}
	poll := firstPoll
	for {
		ok, last := check()
		if ok {
			return
		}
		if !time.Now().Before(deadline) {
			if last == "" {
				t.Fatalf("timed out waiting for %s", what)
			}
			t.Fatalf("timed out waiting for %s; last seen: %s", what, last)
			return
		}
		time.Sleep(min(poll, time.Until(deadline)))
		poll = min(2*poll, maxPoll)
	}
}
