-- Schema 7: logged-out operator console sessions (design §23); SQLite's schema 9. One row per
-- session cookie nonce, until the session would have expired.
CREATE TABLE console_revocations (
    nonce      TEXT        PRIMARY KEY,
    expires_at TIMESTAMPTZ NOT NULL
);
