package taskservice_test

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// A webhook that cannot be reached leaves a notification error on the task,
// which its owner (an agent) reads: the error names the kind of failure and
// never the receiver's host, address, port or query token.
func TestWebhookFailuresDoNotNameTheReceiver(t *testing.T) {
	// A port that was just free: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	tlsHook := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	tlsHook.Config.ErrorLog = log.New(io.Discard, "", 0)
	tlsHook.StartTLS()
	t.Cleanup(tlsHook.Close)
	tests := []struct {
		name, url, reason string
		hidden            []string
	}{
		{"connection refused", "http://" + closed + "/hook?token=hook-token-1", "connection refused",
			[]string{closed, strings.Split(closed, ":")[1], "hook-token-1", "127.0.0.1"}},
		{"unknown host", "http://antler-no-such-receiver.invalid/hook?token=hook-token-2", "",
			[]string{"antler-no-such-receiver", "hook-token-2"}},
		{"untrusted certificate", tlsHook.URL + "/hook?token=hook-token-3", "TLS handshake failed",
			[]string{strings.TrimPrefix(tlsHook.URL, "https://"), "hook-token-3", "127.0.0.1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newNotifyRig(t, openStore(t, filepath.Join(t.TempDir(), "tasks.db")), tt.url)
			r.completed("task-1", `"ok"`)
			row := r.pass("task-1")
			msg := row.NotificationError
			if row.NotificationAttemptCount != 1 || msg == "" || !strings.Contains(msg, tt.reason) {
				t.Fatalf("count %d, error %q: want one failed attempt saying %q", row.NotificationAttemptCount, msg, tt.reason)
			}
			for _, h := range tt.hidden {
				if strings.Contains(msg, h) {
					t.Errorf("notification error %q names the receiver (%q)", msg, h)
				}
			}
		})
	}
}
