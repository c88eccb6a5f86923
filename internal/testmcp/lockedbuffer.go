package testmcp

import (
	"bytes"
	"sync"
)

// LockedBuffer collects output that is written and read from different
// goroutines: a child's output read while the child is still writing (a
// start-up failure is reported before Wait returns), or a logger the code
// under test writes to from its own goroutines.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Len is the number of bytes written so far.
func (b *LockedBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// Bytes returns a copy of what was written so far.
func (b *LockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

// String returns what was written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
