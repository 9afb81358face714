-- Schema 6: mutes (design §22); SQLite's schema 8. One row per conversation
-- key, muted until muted_until or until /unmute (NULL); no topic and no user: the whole chat.
CREATE TABLE mutes (
    channel     TEXT        NOT NULL,
    account_id  TEXT        NOT NULL,
    chat_id     TEXT        NOT NULL,
    topic_id    TEXT        NOT NULL,
    user_id     TEXT        NOT NULL,
    muted_until TIMESTAMPTZ,
    reason      TEXT        NOT NULL,
    muted_by    TEXT        NOT NULL,
    muted_at    TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (channel, account_id, chat_id, topic_id, user_id)
);
