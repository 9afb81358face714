-- Schema 3: which replica holds which chat, and which has each unfinished message in hand
-- (design §11 "replicas").
--
-- A chat is held by one replica at a time: it routes the chat's messages, runs its turns and
-- sends its outbox rows. A lease lapses when its owner stops being live (its heartbeat in
-- replicas is older than daemon.replica_expiry_s, or its row is gone), and is then taken by
-- whoever needs the chat first, together with the chat's unfinished messages.
CREATE TABLE chat_leases (
    channel    TEXT        NOT NULL,
    account_id TEXT        NOT NULL,
    chat_id    TEXT        NOT NULL,
    owner      TEXT        NOT NULL,
    since      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (channel, account_id, chat_id)
);
CREATE INDEX chat_leases_owner ON chat_leases (owner);

-- The replica that has the message in hand; NULL until the chat's holder takes it (a message
-- another replica journaled for a chat this one holds).
ALTER TABLE inbound ADD COLUMN owner TEXT;
CREATE INDEX inbound_unfinished_chat ON inbound (channel, account_id, chat_id, id)
    WHERE status IN ('accepted', 'running');
CREATE INDEX outbox_pending_chat ON outbox (channel, account_id, chat_id)
    WHERE state = 'pending';
