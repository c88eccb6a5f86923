package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/testnpm"
)

// responseGate is a reverse proxy in front of an MCP server that can hold
// back the client's JSON-RPC responses (a POST whose body answers a server
// request): while holding, a response POST is never forwarded, and its
// arrival is signalled; it counts the responses it forwarded per id.
type responseGate struct {
	proxy *httputil.ReverseProxy

	mu        sync.Mutex
	holding   bool
	held      chan struct{} // a held response arrived
	forwarded map[string]int
}

func newResponseGate(t *testing.T, target string) (*responseGate, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &responseGate{held: make(chan struct{}, 4), forwarded: map[string]int{}}
	g.proxy = httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	g.proxy.FlushInterval = -1 // event streams go through as they come
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return g, srv.URL + u.Path
}

func (g *responseGate) hold(on bool) {
	g.mu.Lock()
	g.holding = on
	g.mu.Unlock()
}

func (g *responseGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "" && msg.Result != nil {
			g.mu.Lock()
			holding := g.holding
			if !holding {
				g.forwarded[string(msg.ID)]++
			}
			g.mu.Unlock()
			if holding {
				g.held <- struct{}{}
				<-r.Context().Done() // the sender dies with it unforwarded
				return
			}
		}
	}
	g.proxy.ServeHTTP(w, r)
}

func (g *responseGate) counts() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]int{}
	for k, v := range g.forwarded {
		out[k] = v
	}
	return out
}

// TestSpecTaskAnswerSurvivesAHostCrash runs server-everything's research
// tool (streamable HTTP, its own process) as a 2025-11-25 task through a
// real antler serve, with ambiguous true: the task reaches input_required
// with the server's clarification question in the task API, the event
// stream and the webhook. The user's answer is recorded, and the host is
// SIGKILLed while its delivery (the response to the held elicitation/create)
// is on its way and has not reached the server. After a restart on the same
// SQLite file the answer is delivered from the store to the request the
// server still waits on, in the task's protocol session: the server took
// exactly one response, the report reflects the answer, and the webhook
// heard of the question and of the completion once each.
func TestSpecTaskAnswerSurvivesAHostCrash(t *testing.T) {
	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	gate, upstream := newResponseGate(t, testnpm.StartEverythingHTTP(t))
	cfg := filepath.Join(dir, "extensions_config.json")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`{"mcpServers": {"everything": {"type": "http", "url": %q}}}`, upstream)), 0o600); err != nil {
		t.Fatal(err)
	}
	hook := newHookReceiver(t)
	settingsFile := filepath.Join(dir, "antler.yaml")
	yml := fmt.Sprintf("mcp_tasks:\n  enabled: true\n  poll_interval_seconds: 1\n  lease_seconds: 5\n"+
		"  notifications:\n    webhook_url: %s/hook\n    webhook_secret: %s\n", hook.srv.URL, hookSecret)
	if err := os.WriteFile(settingsFile, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfg, "--settings", settingsFile, "--data", filepath.Join(dir, "data")}

	host := startServe(t, antler, args...)
	events := openEventStream(t, host.base+"/api/threads/t1/mcp-tasks/events", "0")
	code, res := host.do("POST", "/api/mcp/tools/everything_simulate-research-query/call", `{"arguments": {"topic": "python", "ambiguous": true}, "thread_id": "t1"}`)
	sc, _ := res["structuredContent"].(map[string]any)
	id, _ := sc["task_id"].(string)
	if code != 200 || id == "" {
		t.Fatalf("call: %d %v", code, res)
	}
	d := awaitTask(t, host, id, "input_required")
	if q, _ := d["input_required"].(map[string]any); !strings.Contains(fmt.Sprint(q["message"]), "Please clarify") || q["requestedSchema"] == nil {
		t.Fatalf("input_required = %v, want the clarification question", d["input_required"])
	}
	for asked := false; !asked; {
		select {
		case env, ok := <-events.events:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if env.TaskID == id && strings.Contains(string(env.Event), `"status":"input_required"`) {
				asked = true
				if !strings.Contains(string(env.Event), "Please clarify") || env.Instruction != tasknotify.AnswerInstruction {
					t.Errorf("question event: %s, instruction %q", env.Event, env.Instruction)
				}
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no input_required event")
		}
	}

	gate.hold(true)
	if code, res := host.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"interpretation": "snake"}}`); code != 200 || res["status"] != "working" {
		t.Fatalf("answer: %d %v", code, res)
	}
	select {
	case <-gate.held: // recorded, and on its way: not delivered
	case <-time.After(20 * time.Second):
		t.Fatalf("the answer's delivery never reached the upstream\n%s", host.errb)
	}
	_ = host.cmd.Process.Signal(syscall.SIGKILL)
	_ = host.cmd.Wait()
	gate.hold(false)

	again := startServe(t, antler, args...)
	d = awaitTask(t, again, id, "completed")
	if r := fmt.Sprint(d["result"]); !strings.Contains(r, "Research Report: python (snake)") {
		t.Errorf("result = %.600s, want the report reflecting the answer", r)
	}
	if v, _ := d["answer"].(map[string]any); v["status"] != "delivered" {
		t.Errorf("answer view = %v, want delivered", d["answer"])
	}
	if n := gate.counts(); len(n) != 1 {
		t.Errorf("responses the server took, per request id: %v, want one response", n)
	} else {
		for rid, c := range n {
			if c != 1 {
				t.Errorf("request %s answered %d times, want once", rid, c)
			}
		}
	}
	awaitNotified(t, again, "t1", id)
	per := map[string]int{}
	for _, env := range hook.deliveries() {
		if env.TaskID != id {
			continue
		}
		switch {
		case strings.Contains(string(env.Event), `"status":"input_required"`) && strings.Contains(string(env.Event), "Please clarify"):
			per["input_required"]++
		case strings.Contains(string(env.Event), `"status":"completed"`):
			per["completed"]++
		}
	}
	if per["input_required"] != 1 || per["completed"] != 1 {
		t.Errorf("webhook deliveries of the task: %v, want the question and the completion once each", per)
	}
}

// awaitNotified polls the task API of h until the task's notification is
// delivered (a hang guard, not a timing assertion).
func awaitNotified(t *testing.T, h *serveBinary, thread, id string) {
	t.Helper()
	h.awaitDetail(thread, id, "notification delivered", func(d map[string]any) bool { return d["notification_status"] == "delivered" })
}
