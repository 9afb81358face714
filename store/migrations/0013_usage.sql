-- Schema 13: model usage (design §25). One row per turn and model as the provider reported it
-- (folded = 0) for usage.detail_days; then one row per day, channel, account, chat, user and
-- model (folded = 1, at = the day's start UTC, thread_id and correlation_id ''), so totals stay
-- exact while the table stays small. A turn counts once: turns = 1 on its first model's row.
-- cost_nanos: billionths of the currency usage.prices is in (whole numbers sum exactly).
CREATE TABLE usage (
    id               INTEGER PRIMARY KEY,
    at               TEXT    NOT NULL,
    day              TEXT    NOT NULL,  -- at's UTC date, YYYY-MM-DD
    channel          TEXT    NOT NULL,
    account_id       TEXT    NOT NULL,
    chat_id          TEXT    NOT NULL,
    user_id          TEXT    NOT NULL,
    thread_id        TEXT    NOT NULL,
    model            TEXT    NOT NULL,
    correlation_id   TEXT    NOT NULL,
    turns            INTEGER NOT NULL,
    calls            INTEGER NOT NULL,
    unreported_calls INTEGER NOT NULL,
    input_tokens     INTEGER NOT NULL,
    output_tokens    INTEGER NOT NULL,
    cached_tokens    INTEGER NOT NULL,
    cost_nanos       INTEGER NOT NULL,
    folded           INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX usage_at ON usage (at);
CREATE INDEX usage_user ON usage (user_id, at);
CREATE INDEX usage_chat ON usage (chat_id, at);
CREATE INDEX usage_detail ON usage (at) WHERE NOT folded;

-- Messages per user and minute (usage.messages_per_minute), counted by every replica in one
-- place; a user's earlier minutes are dropped as a new one is counted.
CREATE TABLE usage_hits (
    channel TEXT    NOT NULL,
    user_id TEXT    NOT NULL,
    minute  TEXT    NOT NULL,
    count   INTEGER NOT NULL,
    PRIMARY KEY (channel, user_id, minute)
);
CREATE INDEX usage_hits_minute ON usage_hits (minute);
