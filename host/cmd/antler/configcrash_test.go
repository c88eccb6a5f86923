package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestConfigWriteSurvivesHostKills sends whole-set PUTs of two large server
// sets to a real host in a loop and SIGKILLs the host at random moments, 20
// times: after every kill the file is exactly the one set or the other,
// never a partial write, and a restarted host keeps serving the API.
func TestConfigWriteSurvivesHostKills(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a host 20 times")
	}
	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	cfg := filepath.Join(dir, "extensions_config.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}, "skills": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	body := func(tag string) string {
		var b strings.Builder
		b.WriteString(`{"mcp_servers": {`)
		for i := range 400 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"%s-%03d": {"enabled": false, "type": "http", "url": "http://127.0.0.1:9/%s/%d", "description": "%s"}`,
				tag, i, tag, i, strings.Repeat(tag, 40))
		}
		b.WriteString("}}")
		return b.String()
	}
	sets := []string{body("alpha"), body("beta")}
	start := func() *serveBinary {
		return startServe(t, antler, "--config", cfg, "--data", filepath.Join(dir, "data"))
	}

	// The two file contents a PUT of each set produces.
	host := start()
	var want [2][]byte
	for i, set := range sets {
		if code, res := host.do("PUT", "/api/mcp/config", set); code != http.StatusOK {
			t.Fatalf("PUT set %d: %d %v", i, code, res)
		}
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = b
	}
	if bytes.Equal(want[0], want[1]) {
		t.Fatal("the two sets wrote the same file")
	}

	midWrite := 0
	var acked atomic.Int64
	for round := range 20 {
		stop := make(chan struct{})
		done := make(chan struct{})
		writing := make(chan struct{}) // closed once this host has acknowledged a PUT
		go func() {                    // a writer that keeps replacing the set until the host dies
			defer close(done)
			var once sync.Once
			defer once.Do(func() { close(writing) })
			client := &http.Client{Timeout: 5 * time.Second}
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("PUT", host.base+"/api/mcp/config", strings.NewReader(sets[i%2]))
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					return // the host is gone
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					acked.Add(1)
					once.Do(func() { close(writing) })
				}
			}
		}()
		// Kill at a random moment once the host is writing, so every round
		// interrupts a host that is in the middle of its stream of PUTs.
		<-writing
		time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
		_ = host.cmd.Process.Signal(syscall.SIGKILL)
		_ = host.cmd.Wait()
		close(stop)
		<-done

		got, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !bytes.Equal(got, want[0]) && !bytes.Equal(got, want[1]) {
			t.Fatalf("round %d: after SIGKILL the file is neither set (%d bytes):\n%.300s", round, len(got), got)
		}
		if tmps, _ := filepath.Glob(filepath.Join(dir, ".extensions_config.json.*.tmp")); len(tmps) > 0 {
			midWrite++
		}
		host = start()
	}
	if acked.Load() < 20 {
		t.Fatalf("only %d PUTs were acknowledged over 20 rounds: the kills did not interrupt a writing host", acked.Load())
	}
	t.Logf("%d PUTs acknowledged; %d of 20 kills left a temp file behind (killed between the temp write and the rename)", acked.Load(), midWrite)
	if code, res := host.do("GET", "/api/mcp/config", ""); code != http.StatusOK || len(res["mcp_servers"].(map[string]any)) != 400 {
		t.Fatalf("GET after the kills: %d", code)
	}
}
