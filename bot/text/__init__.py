"""Text shown to people: escaped (``escape``) and without credentials (``redact``)."""
