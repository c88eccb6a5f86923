package tasknotify_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/tasknotify"
)

// TestWebhookSendsTheTraceContextAsHeaders: an event's trace context goes
// out as the traceparent and tracestate headers, outside the signed body;
// an event without one sends neither header.
func TestWebhookSendsTheTraceContextAsHeaders(t *testing.T) {
	secret := []byte("whsec-trace-canary")
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name          string
		parent, state string
	}{
		{"trace context with state", parent, "vendor=opaque"},
		{"trace context without state", parent, ""},
		{"no trace context", "", ""},
		{"a state without a parent is not sent", "", "vendor=opaque"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct {
				parent, state []string
				body          []byte
				sig           string
			}
			got := make(chan seen, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				got <- seen{r.Header.Values(tasknotify.HeaderTraceParent), r.Header.Values(tasknotify.HeaderTraceState), body, r.Header.Get(tasknotify.HeaderSignature)}
			}))
			t.Cleanup(srv.Close)
			w := &tasknotify.Webhook{URL: srv.URL, Secret: secret}
			e := tasknotify.Event{TaskID: "mcp-task-1", ThreadID: "t1", UserID: "alice", Version: 1,
				Data: json.RawMessage(`{"status": "completed"}`), TraceParent: tc.parent, TraceState: tc.state}
			if err := w.Notify(context.Background(), e); err != nil {
				t.Fatal(err)
			}
			s := <-got
			wantParent, wantState := tc.parent, tc.state
			if tc.parent == "" {
				wantState = ""
			}
			if strings.Join(s.parent, ",") != wantParent || strings.Join(s.state, ",") != wantState {
				t.Errorf("headers traceparent %q, tracestate %q; want %q, %q", s.parent, s.state, wantParent, wantState)
			}
			if err := tasknotify.Verify(secret, s.sig, s.body, time.Now(), time.Minute); err != nil {
				t.Errorf("signature: %v", err)
			}
			if tc.parent != "" && strings.Contains(string(s.body), tc.parent) {
				t.Error("the trace context is in the signed body")
			}
		})
	}
}
