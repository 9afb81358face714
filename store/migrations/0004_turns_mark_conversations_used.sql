-- Schema 4: a turn starting (its inbound entries marked running on a thread) marks that
-- thread's conversation as used, in the same statement, so finding a conversation's thread
-- can be served from memory instead of costing a write of its own.
CREATE INDEX conversations_thread ON conversations (thread_id) WHERE ended_at IS NULL;

CREATE TRIGGER inbound_running_uses_conversation AFTER UPDATE OF status ON inbound
WHEN NEW.status = 'running' AND NEW.thread_id IS NOT NULL
BEGIN
    UPDATE conversations SET updated_at = NEW.updated_at
    WHERE thread_id = NEW.thread_id AND ended_at IS NULL;
END;
