package taskservice_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskservice"
)

// bloatDriver is a driver (a plugin driver's submit answer, as taskplugin
// passes it on) whose submit returns a megabyte of driver data.
type bloatDriver struct{ cancelled chan struct{} }

func (bloatDriver) Submit(context.Context, task.SubmitRequest) (task.Submission, error) {
	return task.Submission{RemoteTaskID: "r1", State: task.State{Status: task.StatusWorking},
		DriverData: map[string]string{"blob": strings.Repeat("x", 1<<20)}}, nil
}
func (bloatDriver) Status(context.Context, task.Reference) (task.State, error) {
	return task.State{Status: task.StatusWorking}, nil
}
func (d bloatDriver) Cancel(context.Context, task.Reference) (task.State, error) {
	d.cancelled <- struct{}{}
	return task.State{Status: task.StatusCancelled}, nil
}

// TestSubmitDriverDataIsBounded performs a hostile task driver's submit
// that returns a megabyte of driver data: it was stored as it came (up to
// the ABI's 16 MiB a task), and every poll read it back and sent it on,
// while a poll's snapshot is held to task.MaxDriverDataBytes. The submit is
// refused as a protocol error, nothing is stored, and the remote task the
// driver made is cancelled.
func TestSubmitDriverDataIsBounded(t *testing.T) {
	store := openStore(t, filepath.Join(t.TempDir(), "tasks.db"))
	reg := &task.Registry{}
	drv := bloatDriver{cancelled: make(chan struct{}, 1)}
	if err := reg.Register("bloat", drv); err != nil {
		t.Fatal(err)
	}
	cfg := task.DefaultConfig()
	cfg.Enabled = true
	svc := taskservice.New(taskservice.Options{Store: store, Drivers: reg, Config: cfg})
	_, err := svc.Submit(context.Background(), "bloat", task.SubmitRequest{UserID: "alice", ThreadID: "t1", ServerName: "jobs", TaskName: "job"})
	var perr *task.ProtocolError
	if !errors.As(err, &perr) || !strings.Contains(err.Error(), "driver_data exceeds") {
		t.Fatalf("submit: %v, want the driver_data protocol error", err)
	}
	rows, err := store.ListByThread(context.Background(), task.Scope{User: "alice", Thread: "t1"}, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 0 {
		t.Errorf("a refused submit stored %d task(s)", len(rows))
	}
	select {
	case <-drv.cancelled:
	case <-time.After(30 * time.Second):
		t.Error("the remote task of a refused submit was not cancelled")
	}
}
