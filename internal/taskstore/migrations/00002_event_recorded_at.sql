-- When a task's notification event was last recorded, so live consumers
-- (the SSE events endpoint) can follow a thread's events with an index range
-- instead of scanning its history.

-- +goose Up
ALTER TABLE mcp_tasks ADD COLUMN event_recorded_at BIGINT;
CREATE INDEX ix_mcp_tasks_thread_events ON mcp_tasks (thread_id, event_recorded_at);
-- Events recorded before this column existed: their last write is the best
-- record time there is.
UPDATE mcp_tasks SET event_recorded_at = updated_at WHERE event_version > 0;

-- +goose Down
DROP INDEX ix_mcp_tasks_thread_events;
ALTER TABLE mcp_tasks DROP COLUMN event_recorded_at;
