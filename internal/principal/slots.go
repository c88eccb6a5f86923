package principal

import "sync"

// Slots caps what each principal holds at once (tool calls in flight, open
// streams) against one maximum. The gateway's REST door and its MCP door
// share one Slots for tool calls, so a caller's cap holds across both.
type Slots struct {
	mu   sync.Mutex
	max  int
	held map[string]int
}

// NewSlots returns slots of max per key; max ≤ 0 holds nothing back.
func NewSlots(max int) *Slots { return &Slots{max: max, held: map[string]int{}} }

// Max is the cap per key (≤ 0: none).
func (l *Slots) Max() int { return l.max }

// Acquire takes a slot for key, or reports false when key holds Max. The
// release it returns may be called more than once; only the first counts.
func (l *Slots) Acquire(key string) (release func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.held[key] >= l.max {
		return nil, false
	}
	l.held[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.held[key]--; l.held[key] <= 0 {
				delete(l.held, key)
			}
		})
	}, true
}
