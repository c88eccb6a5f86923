-- Answers to input_required. The user's answer is recorded in the same
-- write that moves the task to working (answer_status 'pending'); the poller
-- delivers it under the task's lease and clears it in the write that stores
-- the remote's reply ('delivered'), or records the remote's refusal
-- ('refused') and gives the question back. answer_id is the answer's
-- idempotency key, stable across redeliveries; answer is the user's data and
-- is dropped once the answer is settled.

-- +goose Up
ALTER TABLE mcp_tasks ADD COLUMN answer_status VARCHAR(16);
ALTER TABLE mcp_tasks ADD COLUMN answer_id VARCHAR(64);
ALTER TABLE mcp_tasks ADD COLUMN answer TEXT;
ALTER TABLE mcp_tasks ADD COLUMN answer_recorded_at BIGINT;
ALTER TABLE mcp_tasks ADD COLUMN answer_error TEXT;

-- +goose Down
ALTER TABLE mcp_tasks DROP COLUMN answer_error;
ALTER TABLE mcp_tasks DROP COLUMN answer_recorded_at;
ALTER TABLE mcp_tasks DROP COLUMN answer;
ALTER TABLE mcp_tasks DROP COLUMN answer_id;
ALTER TABLE mcp_tasks DROP COLUMN answer_status;
