-- Schema 7: schedules, messages and agent tasks a chat gets at a time or on a cron expression
-- (design §19 "Schedules"), and their firings. A firing is claimed by moving next_fire_at
-- from its due time (compare-and-set) and inserting its row, unique on (schedule, due time),
-- in one transaction: one claimant per firing, across restarts and replicas.
CREATE TABLE schedules (
    id              INTEGER PRIMARY KEY,
    channel         TEXT    NOT NULL,
    account_id      TEXT    NOT NULL,
    chat_id         TEXT    NOT NULL,
    chat_type       TEXT    NOT NULL,
    topic_id        TEXT    NOT NULL,
    user_id         TEXT    NOT NULL,
    action          TEXT    NOT NULL,  -- message | agent
    text            TEXT    NOT NULL,
    at              TEXT,              -- a one-shot's time; NULL for a cron schedule
    cron            TEXT,
    timezone        TEXT    NOT NULL,
    misfire_grace_s INTEGER NOT NULL,
    state           TEXT    NOT NULL,  -- active | done | cancelled
    next_fire_at    TEXT,
    created_by      TEXT    NOT NULL,
    created_at      TEXT    NOT NULL,
    updated_at      TEXT    NOT NULL,
    last_fired_at   TEXT,
    last_outcome    TEXT
);
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE state = 'active';
CREATE INDEX schedules_chat ON schedules (channel, chat_id, state);

CREATE TABLE schedule_firings (
    id          INTEGER PRIMARY KEY,
    schedule_id INTEGER NOT NULL,
    due_at      TEXT    NOT NULL,
    outcome     TEXT    NOT NULL,  -- claimed | delivered | late | skipped | failed
    replica     TEXT    NOT NULL,
    delivery_id TEXT,
    detail      TEXT,
    at          TEXT    NOT NULL,
    UNIQUE (schedule_id, due_at)
);
CREATE INDEX schedule_firings_claimed ON schedule_firings (at) WHERE outcome = 'claimed';
