-- The durable MCP task table (reference §6.8), written once for SQLite and
-- PostgreSQL: times are unix milliseconds (BIGINT), JSON documents are TEXT,
-- and only types both engines read the same way are used.

-- +goose Up
CREATE TABLE mcp_tasks (
    id                            VARCHAR(64)  NOT NULL PRIMARY KEY,
    user_id                       VARCHAR(64)  NOT NULL,
    thread_id                     VARCHAR(64)  NOT NULL,
    run_id                        VARCHAR(64),
    tool_call_id                  VARCHAR(128),
    server_name                   VARCHAR(128) NOT NULL,
    driver_name                   VARCHAR(64)  NOT NULL,
    remote_task_id                VARCHAR(255) NOT NULL,
    task_name                     VARCHAR(255) NOT NULL,
    -- Case-folded, trimmed task_name, so agents can name a task loosely.
    task_name_key                 TEXT         NOT NULL,

    status                        VARCHAR(32)  NOT NULL,
    result                        TEXT,
    result_preview                TEXT,
    result_truncated              BOOLEAN      NOT NULL DEFAULT FALSE,
    result_artifact               TEXT,
    error                         TEXT,
    input_required                TEXT,
    driver_data                   TEXT         NOT NULL DEFAULT '{}',

    notification_status           VARCHAR(16)  NOT NULL DEFAULT 'none',
    event_fingerprint             VARCHAR(64),
    event_version                 INTEGER      NOT NULL DEFAULT 0,
    notified_version              INTEGER      NOT NULL DEFAULT 0,
    dispatch_version              INTEGER,
    dispatch_attempt              INTEGER      NOT NULL DEFAULT 0,
    dispatch_event                TEXT,
    notification_run_id           VARCHAR(64),
    notification_error            TEXT,
    notification_attempt_count    INTEGER      NOT NULL DEFAULT 0,
    next_notification_at          BIGINT,
    notification_lease_owner      VARCHAR(128),
    notification_lease_expires_at BIGINT,
    notification_lease_token      VARCHAR(64),

    next_poll_at                  BIGINT,
    last_polled_at                BIGINT,
    last_poll_error               TEXT,
    poll_attempt_count            INTEGER      NOT NULL DEFAULT 0,
    consecutive_poll_error_count  INTEGER      NOT NULL DEFAULT 0,
    lease_owner                   VARCHAR(128),
    lease_expires_at              BIGINT,
    lease_token                   VARCHAR(64),

    cancel_requested_at           BIGINT,
    cancel_attempt_count          INTEGER      NOT NULL DEFAULT 0,
    next_cancel_at                BIGINT,
    last_cancel_error             TEXT,

    completed_at                  BIGINT,
    created_at                    BIGINT       NOT NULL,
    updated_at                    BIGINT       NOT NULL,

    CONSTRAINT uq_mcp_tasks_user_server_remote UNIQUE (user_id, server_name, remote_task_id)
);

CREATE INDEX ix_mcp_tasks_user_id ON mcp_tasks (user_id);
CREATE INDEX ix_mcp_tasks_thread_id ON mcp_tasks (thread_id);
CREATE INDEX ix_mcp_tasks_status ON mcp_tasks (status);
CREATE INDEX ix_mcp_tasks_notification_status ON mcp_tasks (notification_status);
CREATE INDEX ix_mcp_tasks_next_poll_at ON mcp_tasks (next_poll_at);
CREATE INDEX ix_mcp_tasks_thread_created ON mcp_tasks (thread_id, created_at);
-- The poll claim: a few pollable statuses, each a range on next_poll_at, so a
-- claim pass reads the due rows and not the whole history.
CREATE INDEX ix_mcp_tasks_due ON mcp_tasks (status, next_poll_at);
CREATE INDEX ix_mcp_tasks_notification_due ON mcp_tasks (notification_status, next_notification_at);
-- The cancel claim. DeerFlow indexes (cancel_requested_at, next_cancel_at),
-- which a claim can only use as "every task ever cancelled"; next_cancel_at is
-- set exactly while a cancellation is pending, so it leads here.
CREATE INDEX ix_mcp_tasks_cancel_due ON mcp_tasks (next_cancel_at, cancel_requested_at);
CREATE INDEX ix_mcp_tasks_name_scope ON mcp_tasks (user_id, thread_id, task_name_key);

-- +goose Down
DROP TABLE mcp_tasks;
