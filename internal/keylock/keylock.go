// Package keylock is a mutex per key: holders of one key wait for each
// other, holders of different keys never do, and a key's entry lasts only
// while someone holds or waits for it, so a table of many short-lived keys
// (config files, upstream resources) does not grow.
package keylock

import (
	"context"
	"sync"
)

// Table hands out one mutex per key. The zero value is ready to use; a
// Table must not be copied after first use.
type Table[K comparable] struct {
	mu    sync.Mutex
	locks map[K]*entry
}

type entry struct {
	sem  chan struct{} // capacity 1: a mutex whose wait can be abandoned
	refs int           // holders plus waiters; guarded by Table.mu
}

// Lock waits for k's mutex or for ctx to be done (then err is ctx's and
// nothing is held). unlock releases the mutex; call it once.
func (t *Table[K]) Lock(ctx context.Context, k K) (unlock func(), err error) {
	t.mu.Lock()
	if t.locks == nil {
		t.locks = map[K]*entry{}
	}
	e := t.locks[k]
	if e == nil {
		e = &entry{sem: make(chan struct{}, 1)}
		t.locks[k] = e
	}
	e.refs++
	t.mu.Unlock()

	drop := func() {
		t.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(t.locks, k)
		}
		t.mu.Unlock()
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
	return func() {
		<-e.sem
		drop()
	}, nil
}

// held is how many keys have an entry, held or waited for (for tests).
func (t *Table[K]) held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.locks)
}

// waiters is how many hold or wait for k (for tests).
func (t *Table[K]) waiters(k K) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.locks[k]; e != nil {
		return e.refs
	}
	return 0
}
