package task_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/antler-mcp/antler/internal/task"
)

func TestDefaultConfig(t *testing.T) {
	c := task.DefaultConfig()
	want := task.Config{
		Enabled:                          false,
		PollIntervalSeconds:              5,
		LeaseSeconds:                     120,
		MaxConcurrentPolls:               8,
		MaxPollBackoffSeconds:            300,
		InputRequiredPollIntervalSeconds: 60,
		TrackingDegradedAfterErrors:      3,
		MaxResultBytes:                   65536,
		ResultPreviewMaxChars:            2000,
		StatusCallTimeoutSeconds:         30,
		MaxActiveTasksPerUser:            100,
	}
	if c != want {
		t.Fatalf("DefaultConfig = %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	if c.PollInterval() != 5*time.Second || c.Lease() != 2*time.Minute ||
		c.MaxPollBackoff() != 5*time.Minute || c.InputRequiredPollInterval() != time.Minute {
		t.Fatalf("durations: %v %v %v %v", c.PollInterval(), c.Lease(), c.MaxPollBackoff(), c.InputRequiredPollInterval())
	}
}

func TestConfigValidateRanges(t *testing.T) {
	tests := []struct {
		field    string
		set      func(*task.Config, int)
		min, max int
	}{
		{"poll_interval_seconds", func(c *task.Config, v int) { c.PollIntervalSeconds = v }, 1, 300},
		{"lease_seconds", func(c *task.Config, v int) { c.LeaseSeconds = v }, 5, 3600},
		{"max_concurrent_polls", func(c *task.Config, v int) { c.MaxConcurrentPolls = v }, 1, 64},
		{"max_poll_backoff_seconds", func(c *task.Config, v int) { c.MaxPollBackoffSeconds = v }, 1, 3600},
		{"input_required_poll_interval_seconds", func(c *task.Config, v int) { c.InputRequiredPollIntervalSeconds = v }, 5, 3600},
		{"tracking_degraded_after_errors", func(c *task.Config, v int) { c.TrackingDegradedAfterErrors = v }, 1, 100},
		{"max_result_bytes", func(c *task.Config, v int) { c.MaxResultBytes = v }, 1024, 10485760},
		{"result_preview_max_chars", func(c *task.Config, v int) { c.ResultPreviewMaxChars = v }, 64, 100000},
		{"status_call_timeout_seconds", func(c *task.Config, v int) { c.StatusCallTimeoutSeconds = v }, 1, 3600},
		{"max_active_tasks_per_user", func(c *task.Config, v int) { c.MaxActiveTasksPerUser = v }, 1, 100000},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			for _, v := range []int{tt.min, tt.max} {
				c := task.DefaultConfig()
				tt.set(&c, v)
				if err := c.Validate(); err != nil {
					t.Errorf("%d rejected: %v", v, err)
				}
			}
			for _, v := range []int{tt.min - 1, tt.max + 1} {
				c := task.DefaultConfig()
				tt.set(&c, v)
				err := c.Validate()
				var ce *task.ConfigError
				if !errors.As(err, &ce) || ce.Field != tt.field || ce.Value != v {
					t.Fatalf("%d: error = %v, want a ConfigError for %s", v, err, tt.field)
				}
				want := fmt.Sprintf("mcp_tasks.%s must be between %d and %d, got %d", tt.field, tt.min, tt.max, v)
				if err.Error() != want {
					t.Errorf("message = %q, want %q", err.Error(), want)
				}
			}
		})
	}
}

func TestConfigValidateReportsEveryField(t *testing.T) {
	err := task.Config{}.Validate()
	var n int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *task.ConfigError
		if errors.As(e, &ce) {
			n++
		}
	}
	if n != 10 {
		t.Fatalf("zero Config: %d field errors, want 10: %v", n, err)
	}
}

func TestConfigYAMLKeepsDefaults(t *testing.T) {
	c := task.DefaultConfig()
	src := "enabled: true\npoll_interval_seconds: 2\nresult_preview_max_chars: 100\n"
	if err := yaml.Unmarshal([]byte(src), &c); err != nil {
		t.Fatal(err)
	}
	if !c.Enabled || c.PollIntervalSeconds != 2 || c.ResultPreviewMaxChars != 100 || c.LeaseSeconds != 120 {
		t.Fatalf("decoded %+v", c)
	}
}

func TestTrackingDegraded(t *testing.T) {
	c := task.DefaultConfig()
	for n, want := range map[int]bool{0: false, 2: false, 3: true, 10: true} {
		if got := c.TrackingDegraded(n); got != want {
			t.Errorf("TrackingDegraded(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestStatusCallBudgetAndPollShare(t *testing.T) {
	tests := []struct {
		timeout, lease, polls int
		budget                time.Duration
		share                 int
	}{
		{timeout: 30, lease: 120, polls: 8, budget: 30 * time.Second, share: 4},
		{timeout: 30, lease: 5, polls: 1, budget: 4 * time.Second, share: 1},
		{timeout: 100, lease: 120, polls: 2, budget: 96 * time.Second, share: 1},
		{timeout: 1, lease: 3600, polls: 64, budget: time.Second, share: 32},
		{timeout: 10, lease: 10, polls: 7, budget: 8 * time.Second, share: 4},
	}
	for _, tt := range tests {
		c := task.DefaultConfig()
		c.StatusCallTimeoutSeconds, c.LeaseSeconds, c.MaxConcurrentPolls = tt.timeout, tt.lease, tt.polls
		if got := c.StatusCallBudget(); got != tt.budget {
			t.Errorf("timeout %ds, lease %ds: budget %v, want %v", tt.timeout, tt.lease, got, tt.budget)
		}
		if got := c.PollShare(); got != tt.share {
			t.Errorf("%d polls: share %d, want %d", tt.polls, got, tt.share)
		}
	}
}
