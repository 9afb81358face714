"""What one model call used, from the provider's own report (design §6, "Usage").

LangChain puts the provider's token counts on the model's ``AIMessage`` as ``usage_metadata``
(``input_tokens``, ``output_tokens``, ``input_token_details.cache_read``) and the model the
provider named in ``response_metadata["model_name"]``; a serialised message from a LangGraph
server carries the same keys. A count the provider did not report is ``None`` (unknown), never
zero: a sum of zeros would read as "free".
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.ports.agent import ModelUsage


def model_usage(usage: object, response_metadata: object, *, fallback_model: str) -> ModelUsage:
    """``ModelUsage`` of one model reply from its ``usage_metadata`` and ``response_metadata``
    (either may be missing); ``fallback_model`` names the model when the reply does not."""
    named = response_metadata.get("model_name") if isinstance(response_metadata, Mapping) else None
    model = named if isinstance(named, str) and named else fallback_model
    if not isinstance(usage, Mapping):
        return ModelUsage(model=model, input_tokens=None, output_tokens=None, cached_tokens=None)
    details = usage.get("input_token_details")
    cached = details.get("cache_read") if isinstance(details, Mapping) else None
    return ModelUsage(
        model=model,
        input_tokens=_count(usage.get("input_tokens")),
        output_tokens=_count(usage.get("output_tokens")),
        cached_tokens=_count(cached),
    )


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
