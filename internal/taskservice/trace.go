package taskservice

import (
	"context"

	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/tracing"
)

// Span names of the background work on a task: each is the root of a trace
// of its own, linked to the span of the call that submitted the task.
const (
	SpanPoll   = "antler.task poll"
	SpanCancel = "antler.task cancel"
	SpanNotify = "antler.task notify"
)

// span starts the root span of one piece of background work on row, linked
// to its submit (row.TraceParent, kept in the store across restarts), and
// returns its end. With tracing off it returns ctx and an end that does
// nothing.
func (s *Service) span(ctx context.Context, name string, row taskstore.Task) (context.Context, func(error)) {
	if s.tracer == nil {
		return ctx, func(error) {}
	}
	ctx, span := s.tracer.StartLinked(ctx, name, row.TraceParent,
		tracing.AttrServer.String(row.ServerName), tracing.AttrTaskDriver.String(row.DriverName))
	return ctx, func(err error) { tracing.End(span, err) }
}
