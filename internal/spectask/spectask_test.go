package spectask_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/spectask"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/task/ordinary"
	"github.com/antler-mcp/antler/internal/taskservice"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

var (
	alice = spectask.Caller{UserID: "alice", ThreadID: "t1"}
	bob   = spectask.Caller{UserID: "bob", ThreadID: "t1"}
)

// rig is the spec task service over the real task service, a real SQLite
// store and the real reports server (stdio) reached through the tool cache.
type rig struct {
	t     *testing.T
	svc   *spectask.Service
	ts    *taskservice.Service
	store *taskstore.Store
}

func newRig(t *testing.T) *rig {
	t.Helper()
	rt := testtask.New(t, fmt.Sprintf(`{"mcpServers": {"reports": {"command": %q, %s}}}`, testmcp.BuildReports(t), testtask.ReportsToolset), testtask.FastConfig())
	rt.Service.Start()
	return &rig{t: t, svc: spectask.New(rt.Service, nil), ts: rt.Service, store: rt.Store}
}

// request is what the door builds from the reports toolset's submit tool.
func request(args string) task.SubmitRequest {
	return task.SubmitRequest{ServerName: "reports", TaskName: "report-generation", Arguments: json.RawMessage(args),
		DriverData: ordinary.DriverData("submit_report", "get_report_status", "cancel_report")}
}

// submit creates a task as alice and returns the creation result and id.
func (r *rig) submit(rev spectask.Revision, args string) (json.RawMessage, string) {
	r.t.Helper()
	raw, err := r.svc.Submit(context.Background(), rev, alice, request(args), nil)
	if err != nil {
		r.t.Fatalf("Submit: %v", err)
	}
	return raw, createdID(r.t, rev, raw)
}

// createdID is the task id of a creation result: in 2025-11-25 the nested
// {task: Task}'s, in 2026-07-28 the flat CreateTaskResult's own.
func createdID(t *testing.T, rev spectask.Revision, raw json.RawMessage) string {
	t.Helper()
	var res struct {
		TaskID string `json:"taskId"`
		Task   *struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("Submit answered %s (%v)", raw, err)
	}
	switch {
	case rev == spectask.Rev20251125 && res.Task != nil && res.Task.TaskID != "" && res.TaskID == "":
		return res.Task.TaskID
	case rev == spectask.Rev20260728 && res.Task == nil && res.TaskID != "":
		return res.TaskID
	}
	t.Fatalf("Submit (%s) answered %s, not the revision's CreateTaskResult", rev, raw)
	return ""
}

// waitStatus waits until the stored task has status.
func (r *rig) waitStatus(id string, status task.Status) taskstore.Task {
	r.t.Helper()
	var row taskstore.Task
	eventually.Check(r.t, fmt.Sprintf("task %s to be %s", id, status), func() (bool, string) {
		var err error
		row, err = r.store.Get(context.Background(), id, "alice")
		if err != nil {
			r.t.Fatal(err)
		}
		return row.Status == status, fmt.Sprintf("%s (last error %q)", row.Status, row.LastPollError)
	})
	return row
}

// volatile are the fields normalised before a golden comparison.
var volatile = map[string]string{"taskId": "<task-id>", "createdAt": "<time>", "lastUpdatedAt": "<time>",
	"nextCursor": "<cursor>"}

// positive are the volatile numbers: normalised only when positive, so a
// zero or negative interval still fails the comparison.
var positive = map[string]bool{"pollInterval": true, "pollIntervalMs": true}

// remoteText matches what the reports server writes into a result that
// changes from run to run: its task ids and times.
var remoteText = regexp.MustCompile(`report-\d+-[0-9a-f]+|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

// normalise replaces volatile values (and task ids inside texts) so a
// shape can be compared with its golden file.
func normalise(v any, id string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if strings.HasPrefix(k, "antler-input-") { // an input request id
				delete(v, k)
				k = "<input-request-id>"
				v[k] = e
			}
			if p, ok := volatile[k]; ok {
				v[k] = p
				continue
			}
			if n, ok := e.(float64); ok && positive[k] && n > 0 {
				v[k] = "<ms>"
				continue
			}
			v[k] = normalise(e, id)
		}
	case []any:
		for i, e := range v {
			v[i] = normalise(e, id)
		}
	case string:
		if id != "" {
			return strings.ReplaceAll(v, id, "<task-id>")
		}
		return remoteText.ReplaceAllString(v, "<remote>")
	}
	return v
}

// golden compares raw, normalised, with testdata/name.json.
func golden(t *testing.T, name string, raw json.RawMessage, ids ...string) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %s is not JSON: %v", name, raw, err)
	}
	for _, id := range append(ids, "") {
		v = normalise(v, id)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s:\ngot  %s\nwant %s", name, got, want)
	}
}

func TestSubmit(t *testing.T) {
	r := newRig(t)
	for _, tt := range []struct {
		rev  spectask.Revision
		name string
	}{{spectask.Rev20251125, "submit-2025-11-25"}, {spectask.Rev20260728, "submit-2026-07-28"}} {
		t.Run(tt.rev.String(), func(t *testing.T) {
			raw, id := r.submit(tt.rev, `{"topic": "revenue", "delay_ms": 60000}`)
			golden(t, tt.name, raw)
			// Durable before the answer: the row is there, in the caller's thread.
			row, err := r.store.Get(context.Background(), id, "alice")
			if err != nil || row.ThreadID != "t1" || row.Status != "submitted" {
				t.Errorf("stored row after Submit: %+v (%v)", row, err)
			}
			var created struct {
				CreatedAt string `json:"createdAt"`
				Task      struct {
					CreatedAt string `json:"createdAt"`
				} `json:"task"`
			}
			_ = json.Unmarshal(raw, &created)
			createdAt := created.Task.CreatedAt
			if tt.rev == spectask.Rev20260728 {
				createdAt = created.CreatedAt
			}
			if at, err := time.Parse(time.RFC3339, createdAt); err != nil || !at.Equal(row.CreatedAt) {
				t.Errorf("createdAt %q is not the row's creation time in RFC 3339 (%v)", createdAt, err)
			}
			if !strings.HasPrefix(id, task.LocalIDPrefix) || len(id) != len(task.LocalIDPrefix)+32 {
				t.Errorf("task id %q is not a high-entropy local id", id)
			}
		})
	}
	neg := int64(-1)
	if _, err := r.svc.Submit(context.Background(), spectask.Rev20251125, alice, request(`{"topic": "x"}`), &neg); !errors.Is(err, spectask.ErrInvalidParams) {
		t.Errorf("Submit with a negative ttl: %v, want ErrInvalidParams", err)
	}
}

// TestFinishedShapes runs a task to its end and checks what each revision's
// tasks/get and tasks/result answer.
func TestFinishedShapes(t *testing.T) {
	r := newRig(t)
	tests := []struct {
		name, args, final string
	}{
		{"completed", `{"topic": "revenue", "delay_ms": 200}`, "completed"},
		{"failed", `{"topic": "revenue", "delay_ms": 200, "fail": true}`, "failed"},
		{"artifact", `{"topic": "revenue", "delay_ms": 200, "artifact": true}`, "completed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, id := r.submit(spectask.Rev20251125, tt.args)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// Result blocks until the task ends.
			res, err := r.svc.Result(ctx, spectask.Rev20251125, alice, id)
			if err != nil {
				t.Fatalf("Result: %v", err)
			}
			if row, err := r.store.Get(ctx, id, "alice"); err != nil || string(row.Status) != tt.final {
				t.Errorf("Result returned while the task is %s (%v), want %s", row.Status, err, tt.final)
			}
			golden(t, tt.name+"-result-2025-11-25", res, id)
			for _, rev := range []spectask.Revision{spectask.Rev20251125, spectask.Rev20260728} {
				got, err := r.svc.Get(ctx, rev, alice, id)
				if err != nil {
					t.Fatal(err)
				}
				golden(t, tt.name+"-get-"+rev.String(), got, id)
			}
			// The 2026-07-28 result inlined is the 2025-11-25 tasks/result
			// without the related-task _meta.
			var detail struct {
				Result json.RawMessage `json:"result"`
			}
			got, _ := r.svc.Get(ctx, spectask.Rev20260728, alice, id)
			_ = json.Unmarshal(got, &detail)
			var full map[string]json.RawMessage
			_ = json.Unmarshal(res, &full)
			delete(full, "_meta")
			if a, b := canonical(t, detail.Result), canonical(t, mustJSON(t, full)); a != b {
				t.Errorf("inlined result %s differs from tasks/result %s", a, b)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func canonical(t *testing.T, raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return string(mustJSON(t, v))
}

func TestInputRequired(t *testing.T) {
	r := newRig(t)
	_, id := r.submit(spectask.Rev20260728, `{"topic": "x", "delay_ms": 0, "input_required": true}`)
	r.waitStatus(id, "input_required")
	for _, rev := range []spectask.Revision{spectask.Rev20251125, spectask.Rev20260728} {
		got, err := r.svc.Get(context.Background(), rev, alice, id)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "input-required-get-"+rev.String(), got, id)
	}
}

func TestOtherPrincipal(t *testing.T) {
	r := newRig(t)
	_, id := r.submit(spectask.Rev20251125, `{"topic": "x", "delay_ms": 60000}`)
	ctx := context.Background()
	calls := map[string]func(spectask.Caller, string) error{
		"get": func(c spectask.Caller, id string) error {
			_, err := r.svc.Get(ctx, spectask.Rev20251125, c, id)
			return err
		},
		"get 2026-07-28": func(c spectask.Caller, id string) error {
			_, err := r.svc.Get(ctx, spectask.Rev20260728, c, id)
			return err
		},
		"result": func(c spectask.Caller, id string) error {
			_, err := r.svc.Result(ctx, spectask.Rev20251125, c, id)
			return err
		},
		"cancel": func(c spectask.Caller, id string) error {
			_, err := r.svc.Cancel(ctx, spectask.Rev20251125, c, id)
			return err
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				who    spectask.Caller
				taskID string
			}{{bob, id}, {alice, task.LocalID()}} {
				if err := call(tc.who, tc.taskID); !errors.Is(err, spectask.ErrNotFound) {
					t.Errorf("%s as %s: %v, want ErrNotFound", name, tc.who.UserID, err)
				}
			}
		})
	}
	// Another thread of the same user finds it: ids are unique per user.
	if _, err := r.svc.Get(ctx, spectask.Rev20251125, spectask.Caller{UserID: "alice", ThreadID: "elsewhere"}, id); err != nil {
		t.Errorf("Get from another thread of the owner: %v", err)
	}
	raw, err := r.svc.List(ctx, spectask.Rev20251125, bob, "")
	if err != nil || string(raw) != `{"tasks":[]}` {
		t.Errorf("bob's list = %s (%v), want no tasks", raw, err)
	}
}

func TestCancel(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	t.Run("2025-11-25", func(t *testing.T) {
		_, id := r.submit(spectask.Rev20251125, `{"topic": "x", "delay_ms": 60000}`)
		raw, err := r.svc.Cancel(ctx, spectask.Rev20251125, alice, id)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "cancel-2025-11-25", raw, id)
		if _, err := r.svc.Cancel(ctx, spectask.Rev20251125, alice, id); !errors.Is(err, spectask.ErrInvalidParams) {
			t.Errorf("cancelling a cancelled task: %v, want ErrInvalidParams", err)
		}
		r.waitStatus(id, "cancelled")
		res, err := r.svc.Result(ctx, spectask.Rev20251125, alice, id)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "cancelled-result-2025-11-25", res, id)
	})
	t.Run("2025-11-25 terminal", func(t *testing.T) {
		_, id := r.submit(spectask.Rev20251125, `{"topic": "x", "delay_ms": 0}`)
		r.waitStatus(id, "completed")
		if _, err := r.svc.Cancel(ctx, spectask.Rev20251125, alice, id); !errors.Is(err, spectask.ErrInvalidParams) {
			t.Errorf("cancelling a completed task: %v, want ErrInvalidParams", err)
		}
	})
	t.Run("2026-07-28", func(t *testing.T) {
		_, id := r.submit(spectask.Rev20260728, `{"topic": "x", "delay_ms": 60000}`)
		raw, err := r.svc.Cancel(ctx, spectask.Rev20260728, alice, id)
		if err != nil || string(raw) != `{}` {
			t.Fatalf("Cancel = %s (%v), want an empty ack", raw, err)
		}
		r.waitStatus(id, "cancelled")
		got, _ := r.svc.Get(ctx, spectask.Rev20260728, alice, id)
		golden(t, "cancelled-get-2026-07-28", got, id)
		// Cancelling an ended task is still an ack.
		if raw, err := r.svc.Cancel(ctx, spectask.Rev20260728, alice, id); err != nil || string(raw) != `{}` {
			t.Errorf("second Cancel = %s (%v), want an empty ack", raw, err)
		}
	})
}

func TestRevisionMethods(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	if _, err := r.svc.Result(ctx, spectask.Rev20260728, alice, "x"); !errors.Is(err, spectask.ErrMethodNotFound) {
		t.Errorf("tasks/result in 2026-07-28: %v, want ErrMethodNotFound", err)
	}
	if _, err := r.svc.List(ctx, spectask.Rev20260728, alice, ""); !errors.Is(err, spectask.ErrMethodNotFound) {
		t.Errorf("tasks/list in 2026-07-28: %v, want ErrMethodNotFound", err)
	}
	if _, err := r.svc.Get(ctx, spectask.Revision(9), alice, "x"); !errors.Is(err, spectask.ErrMethodNotFound) {
		t.Errorf("an unknown revision: %v, want ErrMethodNotFound", err)
	}
}

func TestList(t *testing.T) {
	r := newRig(t)
	spectask.SetPageSize(r.svc, 2)
	ctx := context.Background()
	var want []string
	for i := range 3 {
		_, id := r.submit(spectask.Rev20251125, `{"topic": "x", "delay_ms": 60000}`)
		want = append(want, id)
		if i == 0 {
			// Another thread of the same principal is listed too.
			if _, err := r.svc.Submit(ctx, spectask.Rev20251125, spectask.Caller{UserID: "alice", ThreadID: "t2"},
				request(`{"topic": "y", "delay_ms": 60000}`), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got []string
	cursor, pages := "", 0
	for {
		raw, err := r.svc.List(ctx, spectask.Rev20251125, alice, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if pages == 0 {
			golden(t, "list-2025-11-25", raw)
		}
		pages++
		var page struct {
			Tasks []struct {
				TaskID string `json:"taskId"`
			} `json:"tasks"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			t.Fatal(err)
		}
		for _, tk := range page.Tasks {
			got = append(got, tk.TaskID)
		}
		if page.NextCursor == "" || pages > 5 {
			break
		}
		cursor = page.NextCursor
	}
	if len(got) != 4 || pages != 3 {
		t.Fatalf("listed %d tasks in %d pages, want 4 in 3: %v", len(got), pages, got)
	}
	for _, id := range want {
		if !strings.Contains(strings.Join(got, " "), id) {
			t.Errorf("task %s not listed in %v", id, got)
		}
	}
	if _, err := r.svc.List(ctx, spectask.Rev20251125, alice, "not-a-cursor"); !errors.Is(err, spectask.ErrInvalidParams) {
		t.Errorf("a forged cursor: %v, want ErrInvalidParams", err)
	}
}

// notes collects what Watch emits.
type notes struct {
	mu  sync.Mutex
	got []note
}

type note struct {
	method string
	params map[string]any
}

func (n *notes) emit(method string, params json.RawMessage) {
	var p map[string]any
	_ = json.Unmarshal(params, &p)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, note{method, p})
}

// wait returns the notes once one names id with status.
func (n *notes) wait(t *testing.T, id, status string) []note {
	t.Helper()
	var got []note
	eventually.Check(t, fmt.Sprintf("a %s notification for %s", status, id), func() (bool, string) {
		n.mu.Lock()
		got = append([]note(nil), n.got...)
		n.mu.Unlock()
		for _, e := range got {
			if e.params["taskId"] == id && e.params["status"] == status {
				return true, ""
			}
		}
		return false, fmt.Sprint(got)
	})
	return got
}

func TestWatch(t *testing.T) {
	r := newRig(t)
	tests := []struct {
		rev     spectask.Revision
		method  string
		byID    bool
		final   string
		inlined bool
	}{
		{spectask.Rev20251125, "notifications/tasks/status", false, "completed", false},
		{spectask.Rev20260728, "notifications/tasks", true, "completed", true},
	}
	for _, tt := range tests {
		t.Run(tt.rev.String(), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var n notes
			var ids []string
			_, id := r.submit(tt.rev, `{"topic": "x", "delay_ms": 300}`)
			if tt.byID {
				ids = []string{id}
			}
			done := make(chan error, 1)
			go func() { done <- r.svc.Watch(ctx, tt.rev, alice, ids, n.emit) }()
			got := n.wait(t, id, tt.final)
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Watch: %v", err)
			}
			for _, e := range got {
				if e.method != tt.method {
					t.Errorf("method %q, want %q", e.method, tt.method)
				}
				meta, _ := e.params["_meta"].(map[string]any)
				if rel, _ := meta[spectask.RelatedTaskKey].(map[string]any); rel["taskId"] != e.params["taskId"] {
					t.Errorf("notification without the related-task _meta: %v", e.params)
				}
				if _, ok := e.params["result"]; ok != tt.inlined {
					t.Errorf("result inlined = %v, want %v", ok, tt.inlined)
				}
			}
			// Bob hears nothing of alice's tasks.
			bctx, bcancel := context.WithTimeout(context.Background(), time.Second)
			defer bcancel()
			var bn notes
			_ = r.svc.Watch(bctx, tt.rev, bob, []string{id}, bn.emit)
			if len(bn.got) != 0 {
				t.Errorf("bob heard %v", bn.got)
			}
		})
	}
}
