-- Switchboard durable state, schema 1 (design §11).
--
-- Conventions: datetimes are ISO-8601 UTC text with microseconds ("...T12:00:00.000000+00:00"),
-- so text comparison is time comparison. The parts of a ConversationKey live in their own
-- columns; an absent topic_id / user_id is stored as '' because UNIQUE indexes treat NULLs as
-- distinct.

-- Inbound journal and dedupe: one row per platform message, kept >= 7 days.
CREATE TABLE inbound (
    id                INTEGER PRIMARY KEY,
    channel           TEXT    NOT NULL,
    account_id        TEXT    NOT NULL,
    chat_id           TEXT    NOT NULL,
    message_id        TEXT    NOT NULL,
    message           TEXT    NOT NULL,  -- the InboundMessage as JSON, for crash recovery
    correlation_id    TEXT    NOT NULL,
    status            TEXT    NOT NULL,
    reason            TEXT,
    key_channel       TEXT,              -- the routed ConversationKey; NULL until routed
    key_account_id    TEXT,
    key_chat_id       TEXT,
    key_topic_id      TEXT,
    key_user_id       TEXT,
    thread_id         TEXT,
    duplicates        INTEGER NOT NULL DEFAULT 0,
    last_duplicate_at TEXT,
    recorded_at       TEXT    NOT NULL,
    updated_at        TEXT    NOT NULL,
    UNIQUE (channel, account_id, chat_id, message_id)
);
CREATE INDEX inbound_status ON inbound (status);
CREATE INDEX inbound_recorded_at ON inbound (recorded_at);
CREATE INDEX inbound_message_id ON inbound (message_id, channel);

-- Conversation key -> agent thread. Ended rows are history (/new keeps the old thread).
CREATE TABLE conversations (
    id         INTEGER PRIMARY KEY,
    channel    TEXT NOT NULL,
    account_id TEXT NOT NULL,
    chat_id    TEXT NOT NULL,
    topic_id   TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    thread_id  TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    ended_at   TEXT
);
CREATE UNIQUE INDEX conversations_active
    ON conversations (channel, account_id, chat_id, topic_id, user_id)
    WHERE ended_at IS NULL;
CREATE INDEX conversations_key
    ON conversations (channel, account_id, chat_id, topic_id, user_id, ended_at);
CREATE INDEX conversations_recent ON conversations (updated_at) WHERE ended_at IS NULL;

-- Every message the bot sent, so a reply to any of them lands in its thread.
CREATE TABLE message_links (
    channel        TEXT NOT NULL,
    account_id     TEXT NOT NULL,
    chat_id        TEXT NOT NULL,
    message_id     TEXT NOT NULL,
    key_channel    TEXT NOT NULL,
    key_account_id TEXT NOT NULL,
    key_chat_id    TEXT NOT NULL,
    key_topic_id   TEXT NOT NULL,
    key_user_id    TEXT NOT NULL,
    thread_id      TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    PRIMARY KEY (channel, account_id, chat_id, message_id)
) WITHOUT ROWID;

-- Deliveries recorded before they are attempted (design §8).
CREATE TABLE outbox (
    id               INTEGER PRIMARY KEY,
    idempotency_key  TEXT    NOT NULL UNIQUE,
    op               TEXT    NOT NULL,  -- which Delivery dataclass payload holds
    payload          TEXT    NOT NULL,
    channel          TEXT    NOT NULL,
    account_id       TEXT    NOT NULL,
    chat_id          TEXT    NOT NULL,
    topic_id         TEXT    NOT NULL,
    user_id          TEXT    NOT NULL,
    thread_id        TEXT,
    correlation_id   TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TEXT    NOT NULL,
    last_error       TEXT,
    sent_message_ids TEXT    NOT NULL DEFAULT '[]',
    created_at       TEXT    NOT NULL,
    updated_at       TEXT    NOT NULL
);
CREATE INDEX outbox_state ON outbox (state, id);
CREATE INDEX outbox_correlation ON outbox (correlation_id);

-- Questions the agent asked, waiting for an answer (design §7).
CREATE TABLE clarifications (
    id                  TEXT PRIMARY KEY,
    channel             TEXT NOT NULL,
    account_id          TEXT NOT NULL,
    chat_id             TEXT NOT NULL,
    topic_id            TEXT NOT NULL,
    user_id             TEXT NOT NULL,
    chat_type           TEXT NOT NULL,
    thread_id           TEXT NOT NULL,
    asked_user_id       TEXT NOT NULL,
    question            TEXT NOT NULL,
    options             TEXT NOT NULL,  -- JSON array of strings
    question_message_id TEXT,
    created_at          TEXT NOT NULL,
    expires_at          TEXT NOT NULL,
    state               TEXT NOT NULL,
    answer              TEXT
);
CREATE INDEX clarifications_asked
    ON clarifications (channel, account_id, chat_id, asked_user_id) WHERE state = 'pending';
CREATE INDEX clarifications_key
    ON clarifications (channel, account_id, chat_id, topic_id, user_id) WHERE state = 'pending';
CREATE INDEX clarifications_expiry ON clarifications (expires_at) WHERE state = 'pending';
CREATE INDEX clarifications_question
    ON clarifications (channel, account_id, chat_id, question_message_id);

-- Access control (design §10).
CREATE TABLE users (
    channel    TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    status     TEXT NOT NULL,
    changed_by TEXT NOT NULL,
    changed_at TEXT NOT NULL,
    PRIMARY KEY (channel, user_id)
) WITHOUT ROWID;

CREATE TABLE pairing_requests (
    code         TEXT PRIMARY KEY,
    channel      TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    display_name TEXT NOT NULL,
    chat_id      TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL
);
CREATE INDEX pairing_requests_user ON pairing_requests (channel, user_id);

-- Append-only record of administrative actions.
CREATE TABLE audit (
    id     INTEGER PRIMARY KEY,
    at     TEXT NOT NULL,
    actor  TEXT NOT NULL,
    action TEXT NOT NULL,
    detail TEXT NOT NULL
);

-- Runtime settings that outlive a restart (pause state, ...).
CREATE TABLE settings (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
) WITHOUT ROWID;

-- One row rewritten by Store.writable(): a real committed write, so a read-only file or a
-- full disk shows up in /readyz.
CREATE TABLE write_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    at TEXT NOT NULL
);
