//go:build linux && amd64

package workspace_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestCreateSurvivesASymlinkSwap performs the race an agent could run
// against Create: swap workspace/.mcp, again and again, between its folder
// and a symlink to bob's workspace (renameat2 RENAME_EXCHANGE). A check of
// each folder by its path and a make of the next by its whole path had tmp
// made, and chmod-ed, in bob's workspace within a tenth of a second. Made
// through a root at the thread's user data, nothing lands outside it. (A
// negative needs a window: 3 s of swaps.)
func TestCreateSurvivesASymlinkSwap(t *testing.T) {
	data := t.TempDir()
	alice, bob := aliceAndBob(t, data)
	if err := alice.Create(); err != nil {
		t.Fatal(err)
	}
	mcpDir := filepath.Join(alice.Workspace, ".mcp")
	link := filepath.Join(alice.Workspace, ".mcp.link")
	if err := os.Symlink(bob.Workspace, link); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // the agent's process
		defer close(done)
		for !stop.Load() {
			exchange(mcpDir, link) // .mcp is the symlink, then the folder again
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	hit := false
	for time.Now().Before(deadline) && !hit {
		for range 200 {
			_ = alice.Create()
		}
		if _, err := os.Lstat(filepath.Join(bob.Workspace, "tmp")); err == nil {
			hit = true
		}
	}
	stop.Store(true)
	<-done
	if hit {
		info, _ := os.Stat(filepath.Join(bob.Workspace, "tmp"))
		t.Fatalf("alice's Create made %s in bob's workspace (mode %v) through a swapped .mcp symlink", filepath.Join(bob.Workspace, "tmp"), info.Mode().Perm())
	}
}

// exchange swaps two paths atomically (renameat2 RENAME_EXCHANGE).
func exchange(a, b string) {
	pa, _ := syscall.BytePtrFromString(a)
	pb, _ := syscall.BytePtrFromString(b)
	const atFDCWD, renameExchange, sysRenameat2 = -100, 2, 316 // linux/amd64
	fd := atFDCWD
	syscall.Syscall6(sysRenameat2, uintptr(fd), uintptr(unsafe.Pointer(pa)), uintptr(fd), uintptr(unsafe.Pointer(pb)), renameExchange, 0)
}
