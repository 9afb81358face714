-- Schema 2: every platform call made for an outbox row and its result (design §13 `trace`).
--
-- Append-only. `outcome` is 'sent' or the send error kind ('rate_limited', 'transient', ...);
-- `detail` holds the sent message ids or the error message. Rows go with their outbox row
-- (`outbox purge`), so a reused outbox id never inherits another row's history.
CREATE TABLE delivery_attempts (
    id        INTEGER PRIMARY KEY,
    outbox_id INTEGER NOT NULL REFERENCES outbox (id) ON DELETE CASCADE,
    at        TEXT    NOT NULL,
    outcome   TEXT    NOT NULL,
    detail    TEXT    NOT NULL
);
CREATE INDEX delivery_attempts_row ON delivery_attempts (outbox_id, id);
