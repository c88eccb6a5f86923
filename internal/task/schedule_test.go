package task_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/task"
)

func TestNextPollAt(t *testing.T) {
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	question := json.RawMessage(`{"question":"Which year?"}`)
	tests := []struct {
		name string
		s    task.State
		want time.Duration // < 0: no next poll
	}{
		{"completed", task.State{Status: task.StatusCompleted}, -1},
		{"failed", task.State{Status: task.StatusFailed}, -1},
		{"cancelled", task.State{Status: task.StatusCancelled, PollAfterSeconds: ptr(5.0)}, -1},
		{"submitted", task.State{Status: task.StatusSubmitted}, 5 * time.Second},
		{"working", task.State{Status: task.StatusWorking}, 5 * time.Second},
		{"remote hint", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(12.0)}, 12 * time.Second},
		{"fractional hint", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(0.5)}, 500 * time.Millisecond},
		{"hint at one day", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(86400.0)}, 24 * time.Hour},
		{"hint over one day", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(86401.0)}, 24 * time.Hour},
		{"huge hint", task.State{Status: task.StatusWorking, PollAfterSeconds: ptr(1e300)}, 24 * time.Hour},
		{"input required", task.State{Status: task.StatusInputRequired, InputRequired: question}, time.Minute},
		{"input required short hint", task.State{Status: task.StatusInputRequired, InputRequired: question, PollAfterSeconds: ptr(10.0)}, time.Minute},
		{"input required long hint", task.State{Status: task.StatusInputRequired, InputRequired: question, PollAfterSeconds: ptr(120.0)}, 2 * time.Minute},
		{"input required capped", task.State{Status: task.StatusInputRequired, InputRequired: question, PollAfterSeconds: ptr(1e6)}, 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := task.NextPollAt(now, tt.s, task.DefaultConfig())
			if tt.want < 0 {
				if got != nil {
					t.Fatalf("NextPollAt = %v, want nil", got)
				}
				return
			}
			if got == nil || got.Sub(now) != tt.want {
				t.Fatalf("NextPollAt = %v, want now+%v", got, tt.want)
			}
		})
	}
}

func TestPollBackoff(t *testing.T) {
	def := task.DefaultConfig() // poll 5 s, cap 300 s
	short := def
	short.MaxPollBackoffSeconds = 30
	slow := def
	slow.PollIntervalSeconds = 1
	slow.MaxPollBackoffSeconds = 3600
	tests := []struct {
		name string
		cfg  task.Config
		n    int
		want time.Duration
	}{
		{"first failure", def, 0, 5 * time.Second},
		{"second", def, 1, 10 * time.Second},
		{"third", def, 2, 20 * time.Second},
		{"fourth", def, 3, 40 * time.Second},
		{"fifth", def, 4, 80 * time.Second},
		{"sixth", def, 5, 160 * time.Second},
		{"capped", def, 6, 300 * time.Second},
		{"negative count", def, -3, 5 * time.Second},
		{"short cap", short, 4, 30 * time.Second},
		{"exponent 11", slow, 11, 2048 * time.Second},
		{"exponent 12 capped", slow, 12, 3600 * time.Second},
		{"no overflow", slow, 1 << 30, 3600 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := task.PollBackoff(tt.n, tt.cfg); got != tt.want {
				t.Fatalf("PollBackoff(%d) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}

func TestCancelAndNotificationBackoff(t *testing.T) {
	cfg := task.DefaultConfig()
	tests := []struct {
		n          int
		cancel     time.Duration // n = cancel_attempt_count after the claim
		notifyWait time.Duration // n = notification_attempt_count before the failure
	}{
		{0, 5 * time.Second, 5 * time.Second},
		{1, 5 * time.Second, 10 * time.Second},
		{2, 10 * time.Second, 20 * time.Second},
		{3, 20 * time.Second, 40 * time.Second},
		{4, 40 * time.Second, 80 * time.Second},
		{100, 300 * time.Second, 300 * time.Second},
	}
	for _, tt := range tests {
		if got := task.CancelBackoff(tt.n, cfg); got != tt.cancel {
			t.Errorf("CancelBackoff(%d) = %v, want %v", tt.n, got, tt.cancel)
		}
		if got := task.NotificationBackoff(tt.n, cfg); got != tt.notifyWait {
			t.Errorf("NotificationBackoff(%d) = %v, want %v", tt.n, got, tt.notifyWait)
		}
	}
}
