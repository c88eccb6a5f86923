package dispatch_test

import (
	"testing"

	"github.com/antler-mcp/antler/internal/dispatch"
)

// TestRedact checks that user info, query strings and fragments never
// survive in a message, and that the rest of a URL does.
func TestRedact(t *testing.T) {
	tests := []struct{ in, want string }{
		{"dial https://user:pw@api.example/v1?token=abc refused", "dial https://api.example/v1?… refused"},
		{"see http://host/path#frag", "see http://host/path?…"},
		{"http://h/p/a@b stays", "http://h/p/a@b stays"},
		{"no url here", "no url here"},
		{`"postgres://app:secret@db:5432/antler?sslmode=disable"`, `"postgres://db:5432/antler?…"`},
	}
	for _, tt := range tests {
		if got := dispatch.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
