-- Schema 3: marking an outbox row sent also records that platform call and links the sent
-- messages to the row's conversation, in the same statement (one trip to the store instead
-- of three). Reactions are never linked; rows without a thread (command replies) neither.
CREATE TRIGGER outbox_sent_records AFTER UPDATE OF state ON outbox
WHEN NEW.state = 'sent' AND OLD.state <> 'sent'
BEGIN
    INSERT INTO delivery_attempts (outbox_id, at, outcome, detail)
    VALUES (
        NEW.id,
        NEW.updated_at,
        'sent',
        coalesce((SELECT group_concat(value, ' ') FROM json_each(NEW.sent_message_ids)), '')
    );
    INSERT INTO message_links (channel, account_id, chat_id, message_id, key_channel,
        key_account_id, key_chat_id, key_topic_id, key_user_id, thread_id, created_at)
    SELECT NEW.channel, NEW.account_id, NEW.chat_id, value, NEW.channel, NEW.account_id,
        NEW.chat_id, NEW.topic_id, NEW.user_id, NEW.thread_id, NEW.updated_at
    FROM json_each(NEW.sent_message_ids)
    WHERE NEW.thread_id IS NOT NULL AND NEW.op <> 'reaction'
    ON CONFLICT (channel, account_id, chat_id, message_id) DO UPDATE SET
        key_channel = excluded.key_channel, key_account_id = excluded.key_account_id,
        key_chat_id = excluded.key_chat_id, key_topic_id = excluded.key_topic_id,
        key_user_id = excluded.key_user_id, thread_id = excluded.thread_id;
END;
