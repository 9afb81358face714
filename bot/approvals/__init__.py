"""Approvals in chat (design §24): tool calls that wait for a person's Approve / Edit / Reject."""
