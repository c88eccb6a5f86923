package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// TestHeldOpenPOSTsTakeStreamSlots performs what one key could do before:
// hold as many 2026-07-28 subscriptions/listen POSTs open as the host takes
// connections (a cap every principal shares), since only GET streams took
// the per-principal stream slots. A POST the door holds open now takes one
// of the same slots as GET /sse and GET /mcp, however its method is
// spelled; another key's are its own.
func TestHeldOpenPOSTsTakeStreamSlots(t *testing.T) {
	const maxStreams = 2
	cfg := filepath.Join(t.TempDir(), "extensions_config.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := toolcache.New(toolcache.Options{ConfigPath: cfg, DataDir: t.TempDir()})
	t.Cleanup(cache.Close)
	gw := testgateway.New(t, gateway.Options{Cache: cache,
		Auth: principal.New([]settings.Key{{Key: "k-alice", User: "alice", Role: settings.RoleAgent}, {Key: "k-bob", User: "bob", Role: settings.RoleAgent}}),
		HTTP: gateway.HTTPOptions{MaxStreamsPerPrincipal: maxStreams}})
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)

	do := func(req *http.Request, key string) *http.Response {
		t.Helper()
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	meta := map[string]any{mcp.MetaKeyProtocolVersion: mcp.ProtocolVersion20260728, mcp.MetaKeyClientCapabilities: map[string]any{},
		mcp.MetaKeyClientInfo: map[string]any{"name": "raw", "version": "1"}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "l", "method": "subscriptions/listen",
		"params": map[string]any{"notifications": map[string]any{"toolsListChanged": true}, "_meta": meta}})
	// listen holds a subscription open as key and reports its status once
	// it is acknowledged (200) or refused.
	listen := func(key, msg string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/mcp", strings.NewReader(msg))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
		req.Header.Set(mcp.HeaderMethod, "subscriptions/listen")
		resp := do(req, key)
		if resp.StatusCode != 200 {
			return resp.StatusCode
		}
		line := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") {
					line <- sc.Text()
					return
				}
			}
			close(line)
		}()
		select {
		case l := <-line:
			if !strings.Contains(l, mcp.MethodNotificationSubscriptionsAcknowledged) {
				t.Fatalf("listen: first event %s", l)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("listen: no acknowledgement")
		}
		return 200
	}

	sse, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/sse", nil)
	if code := do(sse, "k-alice").StatusCode; code != 200 {
		t.Fatalf("GET /sse: %d", code)
	}
	if code := listen("k-alice", string(body)); code != 200 {
		t.Fatalf("alice's listen beside one GET stream: %d, want 200", code)
	}
	escaped := strings.Replace(string(body), `"subscriptions/listen"`, `"subscriptions\/listen"`, 1)
	for name, msg := range map[string]string{"as written": string(body), "spelled with an escape": escaped} {
		if code := listen("k-alice", msg); code != http.StatusTooManyRequests {
			t.Errorf("alice's listen past %d open streams, %s: %d, want 429", maxStreams, name, code)
		}
	}
	if code := listen("k-bob", string(body)); code != 200 {
		t.Errorf("bob's listen while alice is at her cap: %d, want 200", code)
	}
}
