package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskservice"
)

// Live task events (GET /api/threads/{thread_id}/mcp-tasks/events).
const (
	// eventPoll is how often a stream asks its cursor for new events.
	eventPoll = time.Second
	// keepaliveEvery sends an SSE comment so proxies keep the stream open.
	keepaliveEvery = 15 * time.Second
)

// taskEvents streams the caller's task events in a thread as server-sent
// events: one "mcp_task" event per new event version, its data the same
// envelope the webhook receives, its id the Last-Event-ID a reconnecting
// client resumes from (see taskservice.Service.FollowEvents). Delivery is
// at least once: deduplicate on task_id and version.
func (s *Server) taskEvents(c echo.Context) error {
	user, thread, err := s.taskScope(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	cursor, err := s.tasks.FollowEvents(ctx, task.Scope{User: user, Thread: thread}, c.Request().Header.Get("Last-Event-ID"))
	if err != nil {
		return err
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
	send := func(e taskservice.StreamEvent) error {
		if _, err := fmt.Fprintf(w, "id: %s\nevent: mcp_task\ndata: %s\n\n", e.ID, e.Data); err != nil {
			return errClientGone
		}
		return nil
	}
	for {
		err := cursor.Next(ctx, send)
		switch {
		case errors.Is(err, errClientGone) || ctx.Err() != nil:
			return nil
		case err != nil:
			s.log.Warn("task event stream: read failed", "request_id", requestIDFrom(c), "error", err.Error())
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
