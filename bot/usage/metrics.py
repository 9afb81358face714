"""Model usage as Prometheus counters (design §25), by channel and model only.

No label names a user, a chat or a thread: each value of a label is a time series the daemon
keeps in memory and every scrape carries, forever, so a label per person grows without bound
as people come (unbounded cardinality). Channels and models are few and chosen by the
operator; who used what is in the store (``switchboard usage``, ``/usage``).
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter

from bot.ports.usage import UsageRecord

KINDS = ("input", "output", "cached")


class UsageMetrics:
    """``switchboard_model_tokens_total{channel, model, kind}``,
    ``switchboard_model_calls_total{channel, model, reported}``,
    ``switchboard_model_cost_total{channel, model}`` and the turns whose usage the store
    could not take."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.tokens = Counter(
            "switchboard_model_tokens",
            "Model tokens the provider reported, by channel, model and kind (input, output,"
            " cached: the part of input read from the provider's cache).",
            ["channel", "model", "kind"],
            registry=registry,
        )
        self.calls = Counter(
            "switchboard_model_calls",
            "Model calls by channel, model and whether the provider reported their usage"
            " (reported=false: tokens unknown, not counted as zero).",
            ["channel", "model", "reported"],
            registry=registry,
        )
        self.cost = Counter(
            "switchboard_model_cost",
            "Cost of model calls from usage.prices (their currency), by channel and model.",
            ["channel", "model"],
            registry=registry,
        )
        self.unrecorded = Counter(
            "switchboard_usage_unrecorded_calls",
            "Usage of turns' model calls the store refused, one per refusal (the turn went"
            " on; that usage is missing from budgets and `switchboard usage`).",
            ["channel"],
            registry=registry,
        )

    def count(self, records: Iterable[UsageRecord]) -> None:
        for record in records:
            labels = {"channel": record.channel, "model": record.model}
            tokens = (record.input_tokens, record.output_tokens, record.cached_tokens)
            for kind, count in zip(KINDS, tokens, strict=True):
                if count:
                    self.tokens.labels(kind=kind, **labels).inc(count)
            reported = record.calls - record.unreported_calls
            if reported:
                self.calls.labels(reported="true", **labels).inc(reported)
            if record.unreported_calls:
                self.calls.labels(reported="false", **labels).inc(record.unreported_calls)
            if record.cost:
                self.cost.labels(**labels).inc(record.cost)

    def not_recorded(self, channel: str) -> None:
        self.unrecorded.labels(channel=channel).inc()
