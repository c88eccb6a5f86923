package mcpserver

import (
	"context"
	"runtime"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// maxDrainWait bounds how long a call's result waits for its session's
// queued notifications.
const maxDrainWait = 500 * time.Millisecond

// drainNotifications holds a call's result until the notifications already
// queued for its session (the upstream's progress and log messages, relayed
// in the order the upstream sent them) have been taken for writing. mcp-go
// writes them from a forwarder goroutine while the result goes out on the
// handler's: on 2026-07-28 a notification the forwarder has taken when the
// response is written is dropped, so a result returned at once can lose or
// overtake the last progress. Waiting shrinks that window to the
// forwarder's next step; it cannot close it (mcp-go exposes neither the
// forwarder nor the stream's writes), nor route a session's notification
// away from its open GET stream, which shares the session's queue.
func drainNotifications(ctx context.Context) {
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil {
		return
	}
	ch := cs.NotificationChannel()
	for deadline := time.Now().Add(maxDrainWait); len(ch) > 0 && ctx.Err() == nil && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	runtime.Gosched() // let the forwarder write what it took
}
