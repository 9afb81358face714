-- Schema 6: the daemons running on this store (design §11). Each registers at start, moves
-- its heartbeat every few seconds and removes its row on a clean stop; a replica is live while
-- its heartbeat is younger than daemon.replica_expiry_s.
CREATE TABLE replicas (
    id           TEXT    PRIMARY KEY,
    host         TEXT    NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT    NOT NULL,
    backend      TEXT    NOT NULL,
    started_at   TEXT    NOT NULL,
    heartbeat_at TEXT    NOT NULL
);
CREATE INDEX replicas_heartbeat ON replicas (heartbeat_at);
