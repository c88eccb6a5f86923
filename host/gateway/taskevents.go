package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/host/apierror"
	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/host/taskstore"
)

// Live task events (GET /api/threads/{thread_id}/mcp-tasks/events).
const (
	// eventPoll is how often a stream looks for new events. Events
	// may be recorded by any replica, so the stream reads the store rather
	// than listening to this process.
	eventPoll = time.Second
	// eventSlack re-reads this much before the stream's cursor, so an event
	// recorded by a replica whose clock lags is still seen; versions already
	// sent are skipped.
	eventSlack = 5 * time.Second
	// keepaliveEvery sends an SSE comment so proxies keep the stream open.
	keepaliveEvery = 15 * time.Second
	eventBatch     = 100
)

type sentEvent struct {
	version int
	at      time.Time
}

// taskEvents streams the caller's task events in a thread as server-sent
// events: one "mcp_task" event per new event version, its data the same
// envelope the webhook receives (the event framed as untrusted), its id the
// time the event was recorded in unix milliseconds. A client that
// reconnects with Last-Event-ID resumes from that time (events of the last
// few seconds before it may come again); without it the stream starts now
// (the task list gives the current state). Delivery is at least once:
// deduplicate on task_id and version.
func (s *Server) taskEvents(c echo.Context) error {
	user, thread, ok, err := s.taskScope(c)
	if !ok {
		return err
	}
	start, resume := time.Now(), false
	if last := c.Request().Header.Get("Last-Event-ID"); last != "" {
		ms, perr := strconv.ParseInt(last, 10, 64)
		if perr != nil || ms < 0 {
			return apierror.New(http.StatusBadRequest, "Last-Event-ID: must be an event id from this stream")
		}
		start, resume = time.UnixMilli(ms), true
	}
	ctx := c.Request().Context()
	seen := map[string]sentEvent{}
	if !resume {
		// A new stream starts now: events recorded before it are history,
		// even those inside the re-read window.
		err := s.eachEvent(ctx, thread, user, start.Add(-eventSlack), func(r taskstore.Task) error {
			if r.EventRecordedAt.Before(start) {
				seen[r.ID] = sentEvent{r.EventVersion, r.EventRecordedAt}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}

	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	w.Flush()

	poll := time.NewTicker(eventPoll)
	defer poll.Stop()
	keepalive := time.NewTicker(keepaliveEvery)
	defer keepalive.Stop()
	cursor := start
	for {
		err := s.eachEvent(ctx, thread, user, cursor.Add(-eventSlack), func(r taskstore.Task) error {
			if seen[r.ID].version >= r.EventVersion {
				return nil
			}
			if err := writeTaskEvent(w, s.tasks.Event(r), r, s.tasks.CanAnswer(r)); err != nil {
				return errClientGone
			}
			seen[r.ID] = sentEvent{r.EventVersion, r.EventRecordedAt}
			if r.EventRecordedAt.After(cursor) {
				cursor = r.EventRecordedAt
			}
			return nil
		})
		switch {
		case errors.Is(err, errClientGone) || ctx.Err() != nil:
			return nil
		case err != nil:
			s.log.Warn("task event stream: read failed", "request_id", requestIDFrom(c), "error", err.Error())
		}
		for id, e := range seen { // no longer re-read
			if e.at.Before(cursor.Add(-2 * eventSlack)) {
				delete(seen, id)
			}
		}
		w.Flush()
		select {
		case <-ctx.Done():
			return nil
		case <-s.streams.Done():
			return nil
		case <-keepalive.C:
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return nil
			}
			w.Flush()
		case <-poll.C:
		}
	}
}

var errClientGone = errors.New("the event stream's client went away")

// eachEvent calls fn, oldest first, for every event of the caller's thread
// recorded at or after from, reading the store a page at a time.
func (s *Server) eachEvent(ctx context.Context, thread, user string, from time.Time, fn func(taskstore.Task) error) error {
	at, id := from, ""
	for {
		rows, err := s.tasks.ThreadEvents(ctx, thread, user, at, id, eventBatch)
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

func writeTaskEvent(w *echo.Response, data json.RawMessage, r taskstore.Task, answerable bool) error {
	env := tasknotify.EnvelopeOf(tasknotify.Event{TaskID: r.ID, ThreadID: r.ThreadID, Version: r.EventVersion, Data: data, Answerable: answerable}, false)
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	// json.Marshal never emits a raw newline, so the data is one SSE line.
	_, err = fmt.Fprintf(w, "id: %d\nevent: mcp_task\ndata: %s\n\n", r.EventRecordedAt.UnixMilli(), b)
	return err
}
