-- Schema 5: recording a turn's reply also marks the inbound messages it answers as handled,
-- in the same statement, so a reply is never recorded without its messages being finished
-- (and a restart never answers them twice). ``finishes`` holds their journal ids as JSON.
ALTER TABLE outbox ADD COLUMN finishes TEXT;

CREATE TRIGGER outbox_reply_finishes_inbound AFTER INSERT ON outbox
WHEN NEW.finishes IS NOT NULL
BEGIN
    UPDATE inbound SET status = 'handled', updated_at = NEW.created_at
    WHERE id IN (SELECT value FROM json_each(NEW.finishes));
END;
