-- Schema 8: mutes (design §22): conversations where the bot answers nothing,
-- until muted_until or until /unmute (NULL). One row per conversation key; a row with no
-- topic and no user mutes the whole chat. Every replica reads them from here.
CREATE TABLE mutes (
    channel     TEXT NOT NULL,
    account_id  TEXT NOT NULL,
    chat_id     TEXT NOT NULL,
    topic_id    TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    muted_until TEXT,
    reason      TEXT NOT NULL,
    muted_by    TEXT NOT NULL,
    muted_at    TEXT NOT NULL,
    PRIMARY KEY (channel, account_id, chat_id, topic_id, user_id)
);
