package mcpserver

import (
	"context"
	"errors"
	"testing"
	"time"
)

type probeKey struct{}

// TestSessionBound: a call bound to its session keeps its request's values
// and outlives the request; the session's end cancels it and what derives
// from it, with the session's error.
func TestSessionBound(t *testing.T) {
	if cancelKey == nil {
		t.Fatal("the context package's cancellation key was not learnt: a bound context would lead to its request's cancellation")
	}
	request, endRequest := context.WithCancelCause(context.WithValue(context.Background(), probeKey{}, "v"))
	life, endLife := context.WithCancel(context.Background())
	bound := bindToSession(request, life)
	call, cancelCall := context.WithCancel(bound)
	defer cancelCall()
	timed, cancelTimed := context.WithTimeout(bound, time.Hour)
	defer cancelTimed()

	if got := call.Value(probeKey{}); got != "v" {
		t.Errorf("the request's value through the call: %v", got)
	}
	endRequest(errors.New("client went away"))
	for name, ctx := range map[string]context.Context{"bound": bound, "call": call, "timed": timed} {
		if ctx.Err() != nil {
			t.Errorf("%s ended with its request: %v", name, ctx.Err())
		}
	}
	if _, ok := bound.Deadline(); ok {
		t.Error("bound has a deadline its session does not")
	}

	endLife()
	for name, ctx := range map[string]context.Context{"call": call, "timed": timed} {
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not end with its session", name)
		}
		if !errors.Is(ctx.Err(), context.Canceled) || !errors.Is(context.Cause(ctx), context.Canceled) {
			t.Errorf("%s: Err %v, Cause %v; want the session's context.Canceled", name, ctx.Err(), context.Cause(ctx))
		}
	}
	if !errors.Is(bound.Err(), context.Canceled) {
		t.Errorf("bound after its session ended: %v", bound.Err())
	}
}
