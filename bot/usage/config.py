"""``usage:``: prices, budgets, the per-user message rate and how long usage rows are kept
(design §25)."""

from __future__ import annotations

from typing import Literal, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

BudgetScope = Literal["user", "chat", "channel", "global"]
BudgetPeriod = Literal["day", "month"]


class Price(BaseModel):
    """US dollars (or any one currency) per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(default=0.0, ge=0)
    output: float = Field(default=0.0, ge=0)
    cached: float | None = Field(default=None, ge=0)
    """Cached input tokens; unset: priced as ``input``."""


class Budget(BaseModel):
    """A limit on tokens or cost per day or month, for each user, chat or channel, or for
    everyone together (``global``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scope: BudgetScope
    per: BudgetPeriod
    tokens: int | None = Field(default=None, ge=1)
    """Input plus output tokens."""
    cost: float | None = Field(default=None, gt=0)
    """From ``usage.prices``; a model without a price costs nothing."""
    channel: str | None = None
    """Only this channel's turns count and are held (default: every channel)."""
    exempt_admins: bool | None = None
    """Unset: ``usage.exempt_admins``."""

    @model_validator(mode="after")
    def _one_measure(self) -> Self:
        if (self.tokens is None) == (self.cost is None):
            raise ValueError("a budget sets exactly one of tokens or cost")
        return self


class UsageSettings(BaseModel):
    """``usage:``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prices: dict[str, Price] = {}
    """Model name (as the provider reports it, else as configured) -> its price."""
    budgets: tuple[Budget, ...] = ()
    messages_per_minute: int | None = Field(default=None, ge=1)
    """Per user, across chats: messages beyond it in a minute are refused before the lane."""
    exempt_admins: bool = True
    timezone: str = "UTC"
    """Where days and months begin and end for budgets and ``/usage``."""
    contact: str = "an admin of this bot"
    """Who can raise a limit, as the budget reply names them."""
    retention_days: int = Field(default=400, ge=1)
    detail_days: int = Field(default=35, ge=1)
    """Per-call rows older than this are folded into one row per day (and dimension)."""

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value
