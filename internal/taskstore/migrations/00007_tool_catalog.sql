-- The tool catalog: each server's tool definitions as an operator approved
-- them, and the changed or new ones a discovery saw that are not approved
-- yet. A (server, tool) has at most one approved and one pending row; a
-- newer pending definition replaces the older one. fingerprint is the
-- SHA-256 of the definition's canonical JSON; definition holds the
-- description and schemas (no secrets: what the server lists to any caller).

-- +goose Up
CREATE TABLE tool_catalog (
    server_name    VARCHAR(128) NOT NULL,
    tool_name      VARCHAR(255) NOT NULL,
    state          VARCHAR(16)  NOT NULL,
    fingerprint    VARCHAR(64)  NOT NULL,
    definition     TEXT         NOT NULL,
    first_seen_at  BIGINT       NOT NULL,
    decided_at     BIGINT,
    decided_by     VARCHAR(64),
    PRIMARY KEY (server_name, tool_name, state)
);

-- +goose Down
DROP TABLE tool_catalog;
