-- Schema 2: the daemons running on this store, and caches invalidated by NOTIFY (design §11).
--
-- Each replica registers at start, moves its heartbeat every few seconds and removes its row
-- on a clean stop; it is live while its heartbeat is younger than daemon.replica_expiry_s.
CREATE TABLE replicas (
    id           TEXT        PRIMARY KEY,
    host         TEXT        NOT NULL,
    pid          INTEGER     NOT NULL,
    version      TEXT        NOT NULL,
    backend      TEXT        NOT NULL,
    started_at   TIMESTAMPTZ NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX replicas_heartbeat ON replicas (heartbeat_at);

-- A change to a cached row also tells the stores listening on 'switchboard_<schema>' (cut to
-- PostgreSQL's 63 bytes for a channel name), with the writer as the payload so a store can
-- ignore its own. The notification goes out when the transaction commits, so a store that
-- empties its caches on it reads the new rows. cache_writes stays: it is what a store checks
-- when it is not listening (its listen connection dropped, or the operator CLI).
CREATE OR REPLACE FUNCTION note_cache_write() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    who TEXT := coalesce(current_setting('switchboard.writer', true), '');
BEGIN
    INSERT INTO cache_writes AS w (writer, changes)
    VALUES (who, 1)
    ON CONFLICT (writer) DO UPDATE SET changes = w.changes + 1;
    PERFORM pg_notify(left('switchboard_' || current_schema(), 63), who);
    RETURN NULL;
END
$$;
