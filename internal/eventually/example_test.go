package eventually_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/antler-mcp/antler/internal/eventually"
)

// workerFinishes is a test's body: it waits for what it needs to see (the
// workers having finished), not for a guessed duration, and Check says what
// it last saw if the wait fails.
func workerFinishes(t *testing.T) {
	var finished atomic.Int32
	for range 3 {
		go finished.Add(1)
	}
	eventually.Check(t, "three workers finished", func() (bool, string) {
		n := finished.Load()
		return n == 3, fmt.Sprintf("%d finished", n)
	})
}

// A test calls True or Check with its own t (an example cannot have one, so
// this one is compiled, not run).
func Example() {
	var test func(*testing.T) = workerFinishes
	_ = test
}
