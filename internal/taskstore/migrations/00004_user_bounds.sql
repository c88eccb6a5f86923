-- Bounds on one user's share of the task runtime. A submit reserves one of
-- the user's active-task slots before anything reaches the upstream; the
-- reservation becomes the task row in the transaction that creates it, or is
-- released if the submit fails, and expires if its process dies first.
-- Counting a user's active tasks and reservations reads two small index
-- ranges, not the user's history.

-- +goose Up
CREATE TABLE mcp_task_reservations (
    id          VARCHAR(64) NOT NULL PRIMARY KEY,
    user_id     VARCHAR(64) NOT NULL,
    expires_at  BIGINT      NOT NULL
);
CREATE INDEX ix_mcp_task_reservations_user ON mcp_task_reservations (user_id, expires_at);
CREATE INDEX ix_mcp_tasks_user_active ON mcp_tasks (user_id)
    WHERE status IN ('submitted', 'working', 'input_required');

-- +goose Down
DROP INDEX ix_mcp_tasks_user_active;
DROP TABLE mcp_task_reservations;
