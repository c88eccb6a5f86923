package task

import (
	"errors"
	"fmt"
	"time"
)

// Bounds shared by the task runtime (DeerFlow's values). Lengths named
// Chars count Unicode code points; Bytes count UTF-8 bytes of compact JSON.
const (
	// MaxServerNameChars fits the server_name column.
	MaxServerNameChars = 128
	// MaxRemoteTaskIDChars fits the remote_task_id column.
	MaxRemoteTaskIDChars = 255
	// MaxTaskNameChars fits the task_name column.
	MaxTaskNameChars = 255
	// MaxResultArtifactBytes bounds an encoded result_artifact.
	MaxResultArtifactBytes = 65536
	// MaxPollAfterSeconds caps a remote poll hint at one day.
	MaxPollAfterSeconds = 86400
	// MaxErrorChars bounds a persisted error message.
	MaxErrorChars = 4000
	// MaxInputRequiredBytes bounds an encoded input_required payload.
	MaxInputRequiredBytes = 65536
	// MaxDriverDataBytes bounds the encoded driver data a submit stores and
	// a snapshot replaces.
	MaxDriverDataBytes = 65536
	// MaxNotificationAttempts is the failure budget before a dead letter.
	MaxNotificationAttempts = 5
	// MaxToolErrorDetailChars bounds the detail of a tool's isError text.
	MaxToolErrorDetailChars = 500
	// MaxPublicErrorChars bounds error texts the task HTTP API returns.
	MaxPublicErrorChars = 500
	// MaxBackoffExponent caps n in the 2^n of every retry backoff.
	MaxBackoffExponent = 16
)

// Config holds the task runtime's knobs: the mcp_tasks section of the host
// settings (DeerFlow's McpTasksConfig). It is read once at startup; a change
// needs a restart. Decode the settings onto DefaultConfig() so absent keys
// keep their defaults, then call Validate.
type Config struct {
	// Enabled turns the runtime on. Off by default.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// PollIntervalSeconds is the default poll cadence and the backoff base.
	PollIntervalSeconds int `yaml:"poll_interval_seconds" json:"poll_interval_seconds"`
	// LeaseSeconds is how long one claim owns a task.
	LeaseSeconds int `yaml:"lease_seconds" json:"lease_seconds"`
	// MaxConcurrentPolls bounds the status calls in flight at once: the
	// size of the poll worker pool (and of each cancel and notification
	// batch). One user's polls take at most PollShare of it.
	MaxConcurrentPolls int `yaml:"max_concurrent_polls" json:"max_concurrent_polls"`
	// MaxPollBackoffSeconds caps every retry backoff.
	MaxPollBackoffSeconds int `yaml:"max_poll_backoff_seconds" json:"max_poll_backoff_seconds"`
	// InputRequiredPollIntervalSeconds is the slowest cadence for tasks
	// waiting on input_required.
	InputRequiredPollIntervalSeconds int `yaml:"input_required_poll_interval_seconds" json:"input_required_poll_interval_seconds"`
	// TrackingDegradedAfterErrors is the consecutive poll failures after
	// which a task is reported as tracking_degraded.
	TrackingDegradedAfterErrors int `yaml:"tracking_degraded_after_errors" json:"tracking_degraded_after_errors"`
	// MaxResultBytes bounds a stored result; a larger one is replaced by a
	// preview.
	MaxResultBytes int `yaml:"max_result_bytes" json:"max_result_bytes"`
	// ResultPreviewMaxChars bounds that preview.
	ResultPreviewMaxChars int `yaml:"result_preview_max_chars" json:"result_preview_max_chars"`
	// StatusCallTimeoutSeconds bounds one background status call; one that
	// runs longer is a retryable poll failure. A call is also cut off before
	// its claim's lease runs out (StatusCallBudget).
	StatusCallTimeoutSeconds int `yaml:"status_call_timeout_seconds" json:"status_call_timeout_seconds"`
	// MaxActiveTasksPerUser bounds one user's active (not yet terminal)
	// tasks; a submit beyond it is refused before it reaches the upstream.
	MaxActiveTasksPerUser int `yaml:"max_active_tasks_per_user" json:"max_active_tasks_per_user"`
}

// DefaultConfig returns DeerFlow's defaults, with the runtime disabled.
func DefaultConfig() Config {
	return Config{
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
}

// ConfigError is a knob outside its range. Field is the settings key.
type ConfigError struct {
	Field    string
	Value    int
	Min, Max int
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("mcp_tasks.%s must be between %d and %d, got %d", e.Field, e.Min, e.Max, e.Value)
}

// Validate checks every knob against its range and reports all that are
// out of it (each a *ConfigError, joined).
func (c Config) Validate() error {
	checks := []struct {
		field    string
		value    int
		min, max int
	}{
		{"poll_interval_seconds", c.PollIntervalSeconds, 1, 300},
		{"lease_seconds", c.LeaseSeconds, 5, 3600},
		{"max_concurrent_polls", c.MaxConcurrentPolls, 1, 64},
		{"max_poll_backoff_seconds", c.MaxPollBackoffSeconds, 1, 3600},
		{"input_required_poll_interval_seconds", c.InputRequiredPollIntervalSeconds, 5, 3600},
		{"tracking_degraded_after_errors", c.TrackingDegradedAfterErrors, 1, 100},
		{"max_result_bytes", c.MaxResultBytes, 1024, 10485760},
		{"result_preview_max_chars", c.ResultPreviewMaxChars, 64, 100000},
		{"status_call_timeout_seconds", c.StatusCallTimeoutSeconds, 1, 3600},
		{"max_active_tasks_per_user", c.MaxActiveTasksPerUser, 1, 100000},
	}
	var errs []error
	for _, k := range checks {
		if k.value < k.min || k.value > k.max {
			errs = append(errs, &ConfigError{Field: k.field, Value: k.value, Min: k.min, Max: k.max})
		}
	}
	return errors.Join(errs...)
}

// PollInterval is PollIntervalSeconds as a duration.
func (c Config) PollInterval() time.Duration { return seconds(c.PollIntervalSeconds) }

// Lease is LeaseSeconds as a duration.
func (c Config) Lease() time.Duration { return seconds(c.LeaseSeconds) }

// MaxPollBackoff is MaxPollBackoffSeconds as a duration.
func (c Config) MaxPollBackoff() time.Duration { return seconds(c.MaxPollBackoffSeconds) }

// InputRequiredPollInterval is InputRequiredPollIntervalSeconds as a duration.
func (c Config) InputRequiredPollInterval() time.Duration {
	return seconds(c.InputRequiredPollIntervalSeconds)
}

// StatusCallBudget is how long one background status call may run: the
// status-call timeout, cut to four fifths of the lease when that is shorter,
// so a poll gives up (a retryable failure, released under its lease) before
// its claim could expire and be taken by another poller.
func (c Config) StatusCallBudget() time.Duration {
	return min(seconds(c.StatusCallTimeoutSeconds), c.Lease()*4/5)
}

// PollShare is the most polls one user may have in flight at once: half the
// pool, rounded up, so a user whose upstream hangs leaves the other half to
// everyone else.
func (c Config) PollShare() int { return (c.MaxConcurrentPolls + 1) / 2 }

// TrackingDegraded reports whether a task with this many consecutive poll
// failures is reported as tracking_degraded (the API and events use it).
func (c Config) TrackingDegraded(consecutiveErrors int) bool {
	return consecutiveErrors >= c.TrackingDegradedAfterErrors
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }
