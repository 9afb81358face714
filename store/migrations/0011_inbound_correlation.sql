-- Schema 11: journal entries found by their correlation id, the reference a failed turn's reply
-- shows the user (``switchboard trace REF``, the console's trace search), without a scan.
CREATE INDEX inbound_correlation ON inbound (correlation_id);
