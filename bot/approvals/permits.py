"""Who may decide on an approval (design §24): the asker, admins, a named list of platform users
or anyone in the conversation, as ``agent.approvals`` said when it was asked. Admins always
may; a person in chat decides only in the chat the request was posted in (an admin anywhere
on the same channel), operators on the console and the command line always."""

from __future__ import annotations

from dataclasses import dataclass

from bot.ports.approvals import Approval
from bot.records import ChatRef

OPERATOR_CHANNELS = frozenset({"console", "cli"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Person:
    """Who decides: ``ref`` is ``<channel>:<user id>`` in chat, ``console:<name>`` or
    ``cli:<user>`` for operators."""

    ref: str
    user_id: str
    name: str
    admin: bool
    chat: ChatRef | None = None
    """Where a chat user acted; ``None`` for an operator."""

    @property
    def operator(self) -> bool:
        return self.chat is None and self.ref.split(":", 1)[0] in OPERATOR_CHANNELS


def may_decide(approval: Approval, person: Person) -> bool:
    if person.operator:
        return True
    if person.chat is None or person.chat.channel != approval.key.channel:
        return False
    here = (person.chat.account_id, person.chat.chat_id)
    in_chat = here == (approval.key.account_id, approval.key.chat_id)
    return person.admin or (in_chat and _named(approval.deciders, approval.asker_id, person))


def _named(deciders: str, asker_id: str, person: Person) -> bool:
    """Whether the stored ``deciders`` names this person (``admins``: nobody but admins)."""
    if deciders == "anyone":
        return True
    if deciders == "asker":
        return person.user_id == asker_id
    if deciders.startswith("users:"):
        return person.user_id in deciders.removeprefix("users:").split(",")
    return False
