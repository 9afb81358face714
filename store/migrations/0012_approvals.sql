-- Schema 12: approvals (design §24): tool calls a paused agent run waits on. A run is
-- resumed once: each approval leaves 'pending' by one compare-and-set (decide, expiry or
-- cancellation), and the run's resumed_at is set, once, only when none is pending any more.
CREATE TABLE approval_runs (
    id             TEXT PRIMARY KEY,
    channel        TEXT NOT NULL,
    account_id     TEXT NOT NULL,
    chat_id        TEXT NOT NULL,
    topic_id       TEXT NOT NULL,
    user_id        TEXT NOT NULL,
    chat_type      TEXT NOT NULL,
    thread_id      TEXT NOT NULL,
    correlation_id TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    resumed_at     TEXT,
    finished_at    TEXT
);
CREATE INDEX approval_runs_correlation ON approval_runs (correlation_id);
-- The daemon's sweep looks for runs not yet resumed every few seconds.
CREATE INDEX approval_runs_unresumed ON approval_runs (created_at) WHERE resumed_at IS NULL;
-- A resumed run is finished when its turn ends; one a crash cut off is resumed again.
CREATE INDEX approval_runs_unfinished ON approval_runs (resumed_at)
    WHERE resumed_at IS NOT NULL AND finished_at IS NULL;

CREATE TABLE approvals (
    id              TEXT    PRIMARY KEY,
    run_id          TEXT    NOT NULL REFERENCES approval_runs (id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    channel         TEXT    NOT NULL,
    account_id      TEXT    NOT NULL,
    chat_id         TEXT    NOT NULL,
    topic_id        TEXT    NOT NULL,
    user_id         TEXT    NOT NULL,
    chat_type       TEXT    NOT NULL,
    thread_id       TEXT    NOT NULL,
    asker_id        TEXT    NOT NULL,
    tool            TEXT    NOT NULL,
    args            TEXT    NOT NULL,  -- the call's arguments, a JSON object
    description     TEXT    NOT NULL,
    allowed         TEXT    NOT NULL,  -- JSON array of strings: approve | edit | reject
    deciders        TEXT    NOT NULL,
    created_at      TEXT    NOT NULL,
    expires_at      TEXT    NOT NULL,
    state           TEXT    NOT NULL,  -- pending | approved | edited | rejected | expired | cancelled
    message_id      TEXT,
    decided_by      TEXT,
    decided_by_name TEXT,
    decided_at      TEXT,
    decided_args    TEXT,
    reason          TEXT,
    UNIQUE (run_id, position)
);
CREATE INDEX approvals_expiry ON approvals (expires_at) WHERE state = 'pending';
CREATE INDEX approvals_thread ON approvals (thread_id, state);
CREATE INDEX approvals_created ON approvals (created_at);
