package taskservice_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/task"
	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/host/taskservice"
	"github.com/antler-mcp/antler/host/taskstore"
	"github.com/antler-mcp/antler/host/taskstore/storetest"
)

// BenchmarkNotificationDelivery measures what one delivered event costs the
// runtime: the outbox's claim (with the event rebuilt), the dispatched mark,
// a signed POST to a webhook on loopback answering 200, and the delivered
// write, in passes of up to 64 (max_concurrent_polls at its maximum) run
// back to back. ms/delivery is the whole pass time divided by the events
// delivered; the poll interval between passes in production is left out.
func BenchmarkNotificationDelivery(b *testing.B) {
	engines := []struct {
		name string
		dsn  func(b *testing.B) string
	}{
		{"sqlite", func(b *testing.B) string { return filepath.Join(b.TempDir(), "tasks.db") }},
		{"postgres", func(b *testing.B) string { return storetest.PostgresSchema(b, storetest.PostgresURL(b)) }},
	}
	for _, engine := range engines {
		b.Run(engine.name, func(b *testing.B) {
			var delivered atomic.Int64
			hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { delivered.Add(1) }))
			b.Cleanup(hook.Close)
			store, err := taskstore.Open(context.Background(), engine.dsn(b))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { store.Close() })
			cfg := task.DefaultConfig()
			cfg.Enabled, cfg.MaxConcurrentPolls = true, 64
			svc := taskservice.New(taskservice.Options{Store: store, Drivers: &task.Registry{}, Config: cfg,
				Notifier: &tasknotify.Webhook{URL: hook.URL, Secret: []byte("bench")}})
			ctx := context.Background()
			const batch = 256
			n := 0
			var total time.Duration
			var events int64
			for b.Loop() {
				b.StopTimer()
				for range batch {
					n++
					_, err := store.Create(ctx, taskstore.NewTask{
						ID: fmt.Sprintf("task-%06d", n), UserID: "alice", ThreadID: "t1", ServerName: "reports",
						DriverName: "ordinary-tools", RemoteTaskID: fmt.Sprintf("r-%06d", n), TaskName: "report",
						Snapshot: taskstore.Snapshot{Status: "completed", Result: json.RawMessage(`{"rows": 3}`)},
					}, time.Now())
					if err != nil {
						b.Fatal(err)
					}
				}
				want := delivered.Load() + batch
				b.StartTimer()
				start := time.Now()
				for delivered.Load() < want {
					if err := svc.RunOnce(ctx); err != nil {
						b.Fatal(err)
					}
				}
				total += time.Since(start)
				events += batch
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(events), "ms/delivery")
		})
	}
}
