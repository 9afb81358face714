-- Schema 8: a recorded reply finishes the inbound messages it answers in the same transaction,
-- written once in the store's Python (``store/outbox.py``), no longer also by a trigger on
-- insert that restated it; SQLite's schema 10. The ``finishes`` column stays.
DROP TRIGGER IF EXISTS outbox_reply_finishes_inbound ON outbox;
DROP FUNCTION IF EXISTS outbox_reply_finishes_inbound();
