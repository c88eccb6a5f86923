//go:build linux

package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRevisionCheck: the identity decides Changed; with the same identity a
// revision is Fresh only when it was read more than 2 s after the file's
// ctime and less than 1 s ago. readAt is forged: waiting out the racy
// window would make the test slow.
func TestRevisionCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(path, []byte(`{"a":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var s Signer
	r, ok := s.Read(path)
	if !ok || !r.idOK {
		t.Fatalf("Read = %+v, %v", r, ok)
	}
	st := StatFile(path)
	ctime := st.id.ctime
	other := st
	other.id.ino++
	tests := []struct {
		name   string
		readAt int64
		now    int64
		st     FileStat
		want   Freshness
	}{
		{"settled and recent", ctime + int64(3*time.Second), ctime + int64(3500*time.Millisecond), st, Fresh},
		{"read within the racy window", ctime + int64(2*time.Second), ctime + int64(2100*time.Millisecond), st, Recheck},
		{"read a second ago", ctime + int64(3*time.Second), ctime + int64(4*time.Second), st, Recheck},
		{"another inode", ctime + int64(3*time.Second), ctime + int64(3500*time.Millisecond), other, Changed},
		{"gone", ctime + int64(3*time.Second), ctime + int64(3500*time.Millisecond), FileStat{}, Changed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev := r
			rev.readAt = tt.readAt
			if got := rev.Check(tt.st, time.Unix(0, tt.now)); got != tt.want {
				t.Errorf("Check = %v, want %v", got, tt.want)
			}
		})
	}
	if got := (Revision{}).Check(st, time.Now()); got != Changed {
		t.Errorf("zero Revision: %v, want Changed", got)
	}
}
