-- Schema 4: fencing tokens on chat leases (design §11 "replicas").
--
-- Every grant of a lease (a claim, a hand-over) takes the next number of one sequence, so a
-- chat's token only grows. A replica remembers the token of each chat it was granted; the
-- writes that act for a chat (a turn's answer, a send) check owner and token, so a replica
-- that stalled past the expiry and lost the chat meanwhile finds out instead of answering.
CREATE SEQUENCE chat_lease_tokens;
ALTER TABLE chat_leases ADD COLUMN token BIGINT NOT NULL DEFAULT nextval('chat_lease_tokens');
