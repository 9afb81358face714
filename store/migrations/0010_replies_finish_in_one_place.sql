-- Schema 10: a recorded reply finishes the inbound messages it answers in the same transaction,
-- written once in the store's Python (``store/outbox.py``: ``OutboxStore.enqueue``), no longer
-- also by a trigger on insert (schema 5) that restated it. The ``finishes`` column stays: it
-- says which messages a reply answered.
DROP TRIGGER IF EXISTS outbox_reply_finishes_inbound;
