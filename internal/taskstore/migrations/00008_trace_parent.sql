-- The W3C traceparent of the call that submitted a task (NULL when traces
-- were off), so that its background polls and notification deliveries, each
-- a trace of its own, link back to the submit after a restart too. It is a
-- trace and span id, never a secret.

-- +goose Up
ALTER TABLE mcp_tasks ADD COLUMN trace_parent VARCHAR(64);

-- +goose Down
ALTER TABLE mcp_tasks DROP COLUMN trace_parent;
