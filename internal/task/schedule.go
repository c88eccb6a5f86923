package task

import (
	"math"
	"time"
)

// NextPollAt returns when a task in snapshot s should next be polled, given
// that the remote answered at now; nil when it is no longer pollable. The
// interval is the remote's poll hint or cfg's poll interval, at least the
// input_required interval while input is required, and at most one day.
func NextPollAt(now time.Time, s State, cfg Config) *time.Time {
	if !s.IsPollable() {
		return nil
	}
	interval := float64(cfg.PollIntervalSeconds)
	if p := s.PollAfterSeconds; p != nil && *p > 0 && !math.IsInf(*p, 0) {
		interval = *p
	}
	if s.Status == StatusInputRequired {
		interval = max(interval, float64(cfg.InputRequiredPollIntervalSeconds))
	}
	interval = min(interval, MaxPollAfterSeconds)
	next := now.Add(time.Duration(interval * float64(time.Second)))
	return &next
}

// PollBackoff is the wait before retrying a failed poll:
// min(poll interval × 2^min(n, 16), max backoff), where n is the task's
// consecutive poll failures before this one. It grows without an attempt
// cap; the next poll is due at the failure's time plus this.
func PollBackoff(consecutiveErrors int, cfg Config) time.Duration {
	n := min(max(consecutiveErrors, 0), MaxBackoffExponent)
	retry := cfg.PollInterval() * time.Duration(1<<n)
	return min(retry, cfg.MaxPollBackoff())
}

// CancelBackoff is the wait before retrying a failed remote cancel, counted
// from when that attempt ended. cancelAttempts is the row's
// cancel_attempt_count, which the claim already incremented, so the first
// failure waits one poll interval.
func CancelBackoff(cancelAttempts int, cfg Config) time.Duration {
	return PollBackoff(cancelAttempts-1, cfg)
}

// NotificationBackoff is the wait before retrying a failed notification
// delivery; failures is the notification_attempt_count before this failure
// (poll 5 s: 0, 1, 2, 3 → 5, 10, 20, 40 s).
func NotificationBackoff(failures int, cfg Config) time.Duration {
	return PollBackoff(failures, cfg)
}
