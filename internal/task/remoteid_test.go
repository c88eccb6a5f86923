package task

import "testing"

func TestWithoutID(t *testing.T) {
	for _, tc := range []struct{ s, id, want string }{
		{`report task "a1b2" was not found`, "a1b2", `report task "[remote task id]" was not found`},
		{"a1b2 and a1b2.", "a1b2", "[remote task id] and [remote task id]."},
		{"xa1b2 a1b2x a1b2-1 _a1b2 a1b2", "a1b2", "xa1b2 a1b2x a1b2-1 _a1b2 [remote task id]"},
		{"retry 1 of 3, task 1", "1", "retry [remote task id] of 3, task [remote task id]"},
		{"nothing here", "a1b2", "nothing here"},
		{"", "a1b2", ""},
		{"keep all", "", "keep all"},
		{"ééa1b2 a1b2é", "a1b2", "ééa1b2 a1b2é"},
	} {
		if got := WithoutRemoteID(tc.s, tc.id); got != tc.want {
			t.Errorf("WithoutRemoteID(%q, %q) = %q, want %q", tc.s, tc.id, got, tc.want)
		}
	}
}
