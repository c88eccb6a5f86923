package toolcache_test

import (
	"testing"
	"time"
)

// waitTimeout bounds every wait on a condition: long enough for a loaded
// machine, and a failure rather than a hang when the condition never holds.
const waitTimeout = 30 * time.Second

// eventually polls cond every few milliseconds until it holds or the wait
// times out, and says which: the tests wait on what they need to see, not
// on a guessed duration.
func eventually(cond func() bool) bool {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitTimeout)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			return cond()
		}
	}
	return true
}

// waitFor fails the test when cond does not come to hold; what says what
// it waited for.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !eventually(cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}
