package principal_test

import (
	"testing"

	"github.com/antler-mcp/antler/internal/principal"
)

// TestSlots: a key holds at most Max slots, keys do not share them, a
// release frees one (twice frees it once), and a cap of 0 holds nothing
// back.
func TestSlots(t *testing.T) {
	t.Parallel()
	s := principal.NewSlots(2)
	r1, ok1 := s.Acquire("alice")
	_, ok2 := s.Acquire("alice")
	if _, ok := s.Acquire("alice"); !ok1 || !ok2 || ok {
		t.Fatalf("alice's three acquires: %v %v %v, want true true false", ok1, ok2, ok)
	}
	if _, ok := s.Acquire("bob"); !ok {
		t.Fatal("bob was refused a slot alice's calls hold")
	}
	r1()
	r1() // a second release must not free a slot alice still holds
	if _, ok := s.Acquire("alice"); !ok {
		t.Fatal("alice was refused the slot she released")
	}
	if _, ok := s.Acquire("alice"); ok {
		t.Fatal("a double release freed two slots")
	}
	unlimited := principal.NewSlots(0)
	for range 100 {
		if _, ok := unlimited.Acquire("alice"); !ok {
			t.Fatal("slots without a cap refused one")
		}
	}
}
