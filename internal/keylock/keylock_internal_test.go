package keylock

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/antler-mcp/antler/internal/eventually"
)

// TestTable: while one key's mutex is held, another key's is free and a
// second holder of the same key waits until it is released; a wait ends
// with its context; nothing stays in the table once every mutex is
// released.
func TestTable(t *testing.T) {
	t.Parallel()
	var tab Table[string]
	ctx := context.Background()
	unlockA, err := tab.Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := tab.Lock(ctx, "b") // another key: not blocked by a's holder
	if err != nil {
		t.Fatal(err)
	}
	unlockB()

	var acquired atomic.Bool
	second := make(chan struct{})
	go func() {
		defer close(second)
		unlock, err := tab.Lock(ctx, "a")
		if err != nil {
			t.Error(err)
			return
		}
		acquired.Store(true)
		unlock()
	}()
	eventually.True(t, "the second holder to queue on a", func() bool { return tab.waiters("a") == 2 })

	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := tab.Lock(gone, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("a wait whose context ended: %v", err)
	}
	held := !acquired.Load()
	unlockA()
	<-second
	if !held || !acquired.Load() {
		t.Errorf("second holder: acquired while a was held %v, after its release %v", !held, acquired.Load())
	}
	if n := tab.held(); n != 0 {
		t.Errorf("%d entries left after every mutex was released", n)
	}
}
