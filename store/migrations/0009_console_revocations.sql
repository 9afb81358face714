-- Schema 9: logged-out operator console sessions (design §23), by the session cookie's
-- nonce, kept until the session would have expired; every replica and every restart reads
-- them from here, so a logout holds for good.
CREATE TABLE console_revocations (
    nonce      TEXT PRIMARY KEY,
    expires_at TEXT NOT NULL
);
