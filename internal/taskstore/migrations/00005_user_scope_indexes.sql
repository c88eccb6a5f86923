-- MCP clients are bound to a principal, not a thread: tasks/list pages
-- through a user's tasks newest first and a task watch follows a user's
-- events, each with an index range instead of scanning the user's history.

-- +goose Up
CREATE INDEX ix_mcp_tasks_user_created ON mcp_tasks (user_id, created_at, id);
CREATE INDEX ix_mcp_tasks_user_events ON mcp_tasks (user_id, event_recorded_at);

-- +goose Down
DROP INDEX ix_mcp_tasks_user_events;
DROP INDEX ix_mcp_tasks_user_created;
