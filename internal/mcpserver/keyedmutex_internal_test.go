package mcpserver

import (
	"sync/atomic"
	"testing"

	"github.com/antler-mcp/antler/internal/eventually"
)

// TestKeyedMutex: while one resource's lock is held, another resource's is
// free and a second holder of the same one waits until it is released;
// nothing stays in the map once every lock is released.
func TestKeyedMutex(t *testing.T) {
	var km keyedMutex
	a, b := subKey{server: "slow", uri: "a"}, subKey{server: "fast", uri: "b"}
	unlockA := km.lock(a)
	km.lock(b)() // another resource: not blocked by a's holder

	var acquired atomic.Bool
	second := make(chan struct{})
	go func() {
		defer close(second)
		unlock := km.lock(a)
		acquired.Store(true)
		unlock()
	}()
	eventually.True(t, "the second holder to queue on a", func() bool {
		km.mu.Lock()
		defer km.mu.Unlock()
		return km.m[a] != nil && km.m[a].users == 2
	})
	held := !acquired.Load()
	unlockA()
	<-second
	if !held || !acquired.Load() {
		t.Errorf("second holder: acquired while a was held %v, after its release %v", !held, acquired.Load())
	}
	km.mu.Lock()
	defer km.mu.Unlock()
	if len(km.m) != 0 {
		t.Errorf("%d entries left after every lock was released", len(km.m))
	}
}
