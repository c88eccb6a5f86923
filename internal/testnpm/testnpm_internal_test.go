package testnpm

import (
	"net"
	"testing"
)

// TestTakenPortIsNotMistakenForTheServer: when another process listens on
// the port picked for server-everything, the attempt reports the port
// taken instead of handing out the other process's address (which accepts
// connections while the server exits).
func TestTakenPortIsNotMistakenForTheServer(t *testing.T) {
	index := Everything(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0") // the other process, played by the test
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if url, inUse := startEverythingHTTP(t, index, port); !inUse {
		t.Fatalf("the attempt on a taken port returned %s", url)
	}
	if owner, known := listening(1<<30, port); owner || !known {
		t.Errorf("listening(no such process, %d) = %v, %v; want false, true", port, owner, known)
	}
	url := StartEverythingHTTP(t)
	if url == "" {
		t.Fatal("no endpoint")
	}
}
