package taskservice

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/metrics"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

// runNotifications is a pass's last phase: claim due
// events and deliver each through the notifier, concurrently, each task
// isolated from the others.
func (s *Service) runNotifications(ctx context.Context) error {
	if s.notifier == nil {
		return nil
	}
	rows, err := s.store.ClaimNotifications(ctx, s.now(), s.owner, s.cfg.Lease(), s.cfg.MaxConcurrentPolls)
	if err != nil {
		return fmt.Errorf("claim MCP task notifications: %w", err)
	}
	var wg sync.WaitGroup
	for _, row := range rows {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					s.log.Error("Unexpected MCP task notification failure; the lease will expire for recovery", "task_id", row.ID, "panic", fmt.Sprint(r))
				}
			}()
			ctx, end := s.span(ctx, SpanNotify, row)
			err := s.notifyOne(ctx, row)
			end(err)
			if err != nil && ctx.Err() == nil {
				s.log.Error("MCP task notification failed", "task_id", row.ID, "error", err.Error())
			}
		})
	}
	wg.Wait()
	return nil
}

// notifyOne delivers one claimed event and records the outcome: delivered;
// dead letter when the receiver says it never will (404, 410) or after
// task.MaxNotificationAttempts counted failures; a busy receiver (409) is
// retried after one poll interval without counting; other failures are
// counted and retried with capped exponential backoff.
func (s *Service) notifyOne(ctx context.Context, row taskstore.Task) error {
	l := row.NotifyLease()
	if n := row.NotificationAttemptCount; n >= task.MaxNotificationAttempts {
		prev := row.NotificationError
		if prev == "" {
			prev = "delivery failed"
		}
		msg := fmt.Sprintf("Notification delivery stopped after %d failed attempts: %s", n, prev)
		s.metrics.Delivery(metrics.DeliveryDeadLetter)
		return s.fenced(row.ID, "dead letter")(s.store.DeadLetter(ctx, l, task.Truncate(msg, task.MaxErrorChars), false, s.now()))
	}
	if row.NotificationStatus != taskstore.NotifyDispatched {
		ok, err := s.store.MarkDispatched(ctx, l, s.now())
		if err != nil || !ok {
			return s.fenced(row.ID, "dispatch")(ok, err)
		}
	}
	nctx, cancel := context.WithTimeout(ctx, notifyTimeout(s.cfg))
	ev := tasknotify.Event{
		TaskID: row.ID, ThreadID: row.ThreadID, UserID: row.UserID,
		Version: row.DispatchVersion, Attempt: row.DispatchAttempt, Data: row.DispatchEvent,
		Answerable: s.CanAnswer(row),
	}
	if s.tracer != nil {
		ev.TraceParent, ev.TraceState = s.tracer.Inject(ctx)
	}
	err := s.notifier.Notify(nctx, ev)
	cancel()
	at := s.now()
	if err != nil && ctx.Err() != nil {
		return nil // shutting down: the lease expires and the same attempt is resent
	}
	var errText string
	if err != nil {
		errText = task.Truncate(err.Error(), task.MaxErrorChars)
		s.log.Warn("MCP task notification not delivered", "task_id", row.ID, "version", row.DispatchVersion,
			"attempt", row.DispatchAttempt, "error", errText)
	}
	retry := at.Add(task.NotificationBackoff(row.NotificationAttemptCount, s.cfg))
	record := s.fenced(row.ID, "record the outcome of")
	switch {
	case err == nil:
		s.metrics.Delivery(metrics.DeliveryDelivered)
		return record(s.store.FinishDelivered(ctx, l, at))
	case errors.Is(err, tasknotify.ErrPermanent):
		s.metrics.Delivery(metrics.DeliveryDeadLetter)
		return record(s.store.DeadLetter(ctx, l, errText, true, at))
	case errors.Is(err, tasknotify.ErrBusy):
		s.metrics.Delivery(metrics.DeliveryRetried)
		return record(s.store.ReleaseNotification(ctx, l, "", false, at.Add(s.cfg.PollInterval()), at))
	default: // refused (answered) or unknown (no answer): counted
		s.metrics.Delivery(metrics.DeliveryRetried)
		return record(s.store.FinishFailed(ctx, l, errText, errors.Is(err, tasknotify.ErrRefused), retry, at))
	}
}

// fenced turns a fenced store write's (applied, error) into an error,
// logging a write that lost its lease.
func (s *Service) fenced(id, what string) func(bool, error) error {
	return func(ok bool, err error) error {
		if err == nil && !ok {
			s.log.Warn("Discarded MCP task notification step after its lease changed or expired", "task_id", id, "step", what)
		}
		return err
	}
}

// notifyTimeout bounds one delivery well inside the notification lease, so a
// slow receiver cannot outlive the claim it was sent under.
func notifyTimeout(cfg task.Config) time.Duration {
	return min(10*time.Second, cfg.Lease()/2)
}
