package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
)

// TestSignerSeesEveryEdit: a Signer that just hashed a file must not hand
// back that hash after an edit, whatever the edit keeps (size, mtime tick)
// and however it is made (in place, renamed over, truncated to the same
// length), since the stat-only fast path is what the hot path uses.
func TestSignerSeesEveryEdit(t *testing.T) {
	tests := []struct {
		name string
		edit func(t *testing.T, path string)
	}{
		{"same size in place", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(`{"b":2}`), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"renamed over", func(t *testing.T, path string) {
			tmp := path + ".new"
			if err := os.WriteFile(tmp, []byte(`{"c":3}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"same size, mtime put back", func(t *testing.T, path string) {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(`{"d":4}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, st.ModTime(), st.ModTime()); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "extensions_config.json")
			if err := os.WriteFile(path, []byte(`{"a":1}`), 0o600); err != nil {
				t.Fatal(err)
			}
			s := config.ConfigSigner()
			before, ok := s.Fingerprint(path)
			if !ok || !before.Verifiable() {
				t.Fatalf("first Stat = %+v, %v", before, ok)
			}
			if again, _ := s.Fingerprint(path); again != before {
				t.Fatalf("unchanged file: %+v, then %+v", before, again)
			}
			tt.edit(t, path)
			after, ok := s.Fingerprint(path)
			if !ok || after.SHA256 == before.SHA256 {
				t.Fatalf("edit not seen: before %+v, after %+v", before, after)
			}
			if fresh, _ := config.Fingerprint(path); fresh != after {
				t.Fatalf("signer %+v, fresh read %+v", after, fresh)
			}
		})
	}
}
