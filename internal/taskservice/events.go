package taskservice

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
)

const (
	// eventSlack re-reads this much before a cursor, so an event recorded
	// by a replica whose clock lags is still seen; versions already sent
	// are skipped.
	eventSlack = 5 * time.Second
	eventBatch = 100
)

// StreamEvent is one task event as a live stream sends it.
type StreamEvent struct {
	// ID is the time the event was recorded, in unix milliseconds: a
	// client that reconnects names it as its Last-Event-ID.
	ID string
	// Data is the envelope the webhook receives (the event framed as
	// untrusted), as one line of JSON.
	Data []byte
}

type sentEvent struct {
	version int
	at      time.Time
}

// EventCursor follows the caller's task events in one scope. Events may be
// recorded by any replica, so it reads the store rather than listening to
// this process; delivery is at least once (a reader deduplicates on
// task_id and version). It is not safe for concurrent use.
type EventCursor struct {
	svc    *Service
	scope  task.Scope
	cursor time.Time
	seen   map[string]sentEvent
}

// FollowEvents starts a cursor over the task events of the caller's scope.
// With a lastEventID (a StreamEvent.ID from an earlier stream) it resumes
// from that time, and events of the last few seconds before it may come
// again; without one it starts now (the task list gives the current state).
// A lastEventID that is no such id is an *apierror.Error.
func (s *Service) FollowEvents(ctx context.Context, sc task.Scope, lastEventID string) (*EventCursor, error) {
	start, resume := time.Now(), false
	if lastEventID != "" {
		ms, err := strconv.ParseInt(lastEventID, 10, 64)
		if err != nil || ms < 0 {
			return nil, apierror.New(http.StatusBadRequest, "Last-Event-ID: must be an event id from this stream")
		}
		start, resume = time.UnixMilli(ms), true
	}
	c := &EventCursor{svc: s, scope: sc, cursor: start, seen: map[string]sentEvent{}}
	if !resume {
		// A new stream starts now: events recorded before it are history,
		// even those inside the re-read window.
		err := c.each(ctx, start.Add(-eventSlack), func(r taskstore.Task) error {
			if r.EventRecordedAt.Before(start) {
				c.seen[r.ID] = sentEvent{r.EventVersion, r.EventRecordedAt}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Next calls send, oldest first, for every event not sent yet. An error
// from send stops it and is returned as is (the event counts as not sent);
// any other error is the store's.
func (c *EventCursor) Next(ctx context.Context, send func(StreamEvent) error) error {
	err := c.each(ctx, c.cursor.Add(-eventSlack), func(r taskstore.Task) error {
		if c.seen[r.ID].version >= r.EventVersion {
			return nil
		}
		env := tasknotify.EnvelopeOf(tasknotify.Event{TaskID: r.ID, ThreadID: r.ThreadID, Version: r.EventVersion,
			Data: c.svc.Event(r), Answerable: c.svc.CanAnswer(r)}, false)
		b, err := json.Marshal(env) // json.Marshal never emits a raw newline
		if err != nil {
			return err
		}
		if err := send(StreamEvent{ID: strconv.FormatInt(r.EventRecordedAt.UnixMilli(), 10), Data: b}); err != nil {
			return err
		}
		c.seen[r.ID] = sentEvent{r.EventVersion, r.EventRecordedAt}
		if r.EventRecordedAt.After(c.cursor) {
			c.cursor = r.EventRecordedAt
		}
		return nil
	})
	for id, e := range c.seen { // no longer re-read
		if e.at.Before(c.cursor.Add(-2 * eventSlack)) {
			delete(c.seen, id)
		}
	}
	return err
}

// each calls fn, oldest first, for every event of the cursor's thread
// recorded at or after from, reading the store a page at a time.
func (c *EventCursor) each(ctx context.Context, from time.Time, fn func(taskstore.Task) error) error {
	at, id := from, ""
	for {
		rows, err := c.svc.ThreadEvents(ctx, c.scope, at, id, eventBatch)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(rows) < eventBatch {
			return nil
		}
		last := rows[len(rows)-1]
		at, id = last.EventRecordedAt, last.ID
	}
}
