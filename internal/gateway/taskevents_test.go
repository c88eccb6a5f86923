package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testtask"
	"github.com/antler-mcp/antler/internal/toolcache"
)

var eventKeys = []settings.Key{{Key: "alice-key", User: "alice", Role: settings.RoleAgent}, {Key: "bob-key", User: "bob", Role: settings.RoleAgent}}

// eventRig is a gateway with a running task service over a SQLite store;
// tests record events by writing tasks to the store, as the poller would.
type eventRig struct {
	store *taskstore.Store
	svc   *taskservice.Service
	gw    *gateway.Server
}

func newEventRig(t *testing.T) *eventRig {
	t.Helper()
	cfg := task.DefaultConfig()
	cfg.Enabled = true
	rt := testtask.Open(t, testtask.Options{Config: cfg})
	rt.Service.Start()
	return &eventRig{store: rt.Store, svc: rt.Service, gw: testgateway.New(t, gateway.Options{Cache: rt.Cache, Auth: principal.New(eventKeys), Tasks: rt.Service})}
}

// finish records a completed task of user in thread at at.
func (r *eventRig) finish(t *testing.T, id, user, thread string, at time.Time) {
	t.Helper()
	_, err := r.store.Create(context.Background(), taskstore.NewTask{
		ID: id, UserID: user, ThreadID: thread, ServerName: "reports", DriverName: "ordinary-tools",
		RemoteTaskID: "remote-" + id, TaskName: "Report " + id,
		State: taskstore.State{Status: "completed", Result: json.RawMessage(`"done"`)},
	}, at)
	if err != nil {
		t.Fatal(err)
	}
}

type sse struct {
	resp   *http.Response
	events chan tasknotify.Envelope
	ids    chan string
}

func openSSE(t *testing.T, url, key, lastID string) *sse {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		t.Fatalf("GET events: %d", resp.StatusCode)
	}
	s := &sse{resp: resp, events: make(chan tasknotify.Envelope, 32), ids: make(chan string, 32)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if id, ok := strings.CutPrefix(line, "id: "); ok {
				select { // only the first ids are read
				case s.ids <- id:
				default:
				}
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var env tasknotify.Envelope
				if err := json.Unmarshal([]byte(data), &env); err != nil {
					t.Errorf("event data is not an envelope: %v", err)
				}
				s.events <- env
			}
		}
	}()
	return s
}

// until collects events until one for task last arrives.
func (s *sse) until(t *testing.T, last string) []string {
	t.Helper()
	var got []string
	timeout := time.After(20 * time.Second)
	for {
		select {
		case env, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended after %v", got)
			}
			got = append(got, env.TaskID)
			if env.TaskID == last {
				return got
			}
		case <-timeout:
			t.Fatalf("no event for %s; got %v", last, got)
		}
	}
}

func TestTaskEventStream(t *testing.T) {
	r := newEventRig(t)
	srv := httptest.NewServer(r.gw.Handler())
	t.Cleanup(srv.Close)
	url := srv.URL + "/api/threads/t1/mcp-tasks/events"

	r.finish(t, "old", "alice", "t1", time.Now().Add(-time.Minute))
	live := openSSE(t, url, "alice-key", "")
	now := time.Now()
	r.finish(t, "a1", "alice", "t1", now)
	r.finish(t, "b1", "bob", "t1", now)   // another user's
	r.finish(t, "a2", "alice", "t2", now) // another thread's
	r.finish(t, "a3", "alice", "t1", now.Add(time.Millisecond))
	if got := strings.Join(live.until(t, "a3"), " "); got != "a1 a3" {
		t.Errorf("live stream = %s, want a1 a3 (no replay, only alice's thread t1)", got)
	}

	// Last-Event-ID 0 replays the thread in order.
	replay := openSSE(t, url, "alice-key", "0")
	if got := strings.Join(replay.until(t, "a3"), " "); got != "old a1 a3" {
		t.Errorf("replayed stream = %s, want old a1 a3", got)
	}
	// Resuming after a3's id sends nothing old; a later event arrives.
	var lastID string
	for range 3 {
		lastID = <-replay.ids
	}
	resumed := openSSE(t, url, "alice-key", lastID)
	r.finish(t, "a4", "alice", "t1", time.Now().Add(time.Second))
	if got := strings.Join(resumed.until(t, "a4"), " "); strings.Contains(got, "old") {
		t.Errorf("resumed stream = %s: it went back further than the re-read window", got)
	}
}

// A burst larger than one read of the store is streamed whole, even when
// every event shares one millisecond.
func TestTaskEventStreamBurst(t *testing.T) {
	r := newEventRig(t)
	srv := httptest.NewServer(r.gw.Handler())
	t.Cleanup(srv.Close)
	at := time.Now()
	for i := range 250 {
		r.finish(t, fmt.Sprintf("burst-%03d", i), "alice", "t1", at)
	}
	s := openSSE(t, srv.URL+"/api/threads/t1/mcp-tasks/events", "alice-key", "0")
	got := s.until(t, "burst-249")
	if len(got) != 250 {
		t.Errorf("streamed %d events of 250", len(got))
	}
	r.finish(t, "after", "alice", "t1", at.Add(time.Second))
	if next := s.until(t, "after"); len(next) != 1 {
		t.Errorf("after the burst the stream sent %v", next)
	}
}

func TestTaskEventStreamRefusals(t *testing.T) {
	r := newEventRig(t)
	srv := httptest.NewServer(r.gw.Handler())
	t.Cleanup(srv.Close)
	get := func(url, key, last string) int {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		if last != "" {
			req.Header.Set("Last-Event-ID", last)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(srv.URL+"/api/threads/t1/mcp-tasks/events", "alice-key", "yesterday"); code != 400 {
		t.Errorf("bad Last-Event-ID: %d, want 400", code)
	}
	if code := get(srv.URL+"/api/threads/t1/mcp-tasks/events", "nobody", ""); code != 401 {
		t.Errorf("unknown key: %d, want 401", code)
	}
	off := httptest.NewServer(testgateway.New(t, gateway.Options{Cache: toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, `{"mcpServers": {}}`)}),
		Auth: principal.New(eventKeys)}).Handler())
	t.Cleanup(off.Close)
	if code := get(off.URL+"/api/threads/t1/mcp-tasks/events", "alice-key", ""); code != 503 {
		t.Errorf("runtime off: %d, want 503", code)
	}
}

// An open stream does not hold up shutdown.
func TestTaskEventStreamEndsAtShutdown(t *testing.T) {
	r := newEventRig(t)
	logs := &syncBuffer{}
	cache := toolcache.New(toolcache.Options{ConfigPath: writeTemp(t, `{"mcpServers": {}}`)})
	t.Cleanup(cache.Close)
	gw := testgateway.New(t, gateway.Options{Cache: cache, Auth: principal.New(eventKeys), Tasks: r.svc,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- gw.Serve(ctx, ln, 30*time.Second) }()
	s := openSSE(t, "http://"+ln.Addr().String()+"/api/threads/t1/mcp-tasks/events", "alice-key", "")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, open := <-s.events; open {
		t.Error("the stream sent an event instead of ending")
	}
	if strings.Contains(logs.String(), "did not finish in time") {
		t.Errorf("the open stream held the shutdown until the grace period ran out:\n%s", logs)
	}
}
