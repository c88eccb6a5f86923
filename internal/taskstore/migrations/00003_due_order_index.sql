-- The poll claim picks the earliest due tasks among the pollable ones that
-- have no cancellation request. With a large due backlog, the
-- (status, next_poll_at) index splits into one range per status and the
-- claim sorts every due row. This partial index holds exactly the claimable
-- rows in claim order, so a claim reads its LIMIT rows and stops.

-- +goose Up
CREATE INDEX ix_mcp_tasks_claim_order ON mcp_tasks (next_poll_at, id)
    WHERE status IN ('submitted', 'working', 'input_required') AND cancel_requested_at IS NULL;

-- +goose Down
DROP INDEX ix_mcp_tasks_claim_order;
