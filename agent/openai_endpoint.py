"""The OpenAI-compatible model endpoint: everything of the embedded agent that needs the OpenAI
SDK (design §6). The chat model, its connection pool, the probe of ``switchboard check
--online``, and what the SDK's errors mean to a user.

A module of its own because the SDK and ``langchain-openai`` are about 30 MB once imported:
with the offline echo model (no model configured, the quick start) nothing imports it.
"""

from __future__ import annotations

import openai

from agent.openai_model import UnwalkedHistoryChatOpenAI
from bot.config.settings import ModelSettings
from bot.errors import AgentError


def endpoint_chat_model(
    settings: ModelSettings,
    *,
    max_retries: int,
    timeout_s: float,
    http_async_client: openai.DefaultAsyncHttpxClient | None,
) -> UnwalkedHistoryChatOpenAI:
    """``ChatOpenAI`` for the configured endpoint.

    An endpoint without a key (a local vLLM or Ollama) gets a placeholder key, because the
    OpenAI client refuses to start without one. ``http_async_client`` lets the caller own (and
    close) the connection pool; it must be the SDK's own client class.

    The key is handed over as a coroutine function, which ``ChatOpenAI`` takes to mean the model
    is only called asynchronously (as the graph calls it): it then builds no synchronous OpenAI
    client, whose connection pool and TLS context (a parsed copy of the CA store, about 1.2 MB)
    would never be used.
    """
    key = settings.api_key.get_secret_value() if settings.api_key else ""

    async def api_key() -> str:
        return key or "not-needed"

    return UnwalkedHistoryChatOpenAI(
        model=settings.name,
        base_url=settings.base_url,
        api_key=api_key,
        streaming=True,
        stream_usage=True,
        max_retries=max_retries,
        timeout=timeout_s,
        http_async_client=http_async_client,
    )


def connection_pool() -> openai.DefaultAsyncHttpxClient:
    """The SDK's own HTTP client class, with its defaults (timeouts, limits)."""
    return openai.DefaultAsyncHttpxClient()


async def probe_endpoint(model: ModelSettings) -> str:
    """Ask the endpoint for its model list; ``AgentError`` naming what failed."""
    key = model.api_key.get_secret_value() if model.api_key else ""
    client = openai.AsyncOpenAI(
        base_url=model.base_url, api_key=key or "not-needed", timeout=10.0, max_retries=0
    )
    try:
        listing = await client.models.list()
    except openai.NotFoundError:
        return f"{model.base_url} answers (it has no /models endpoint)"
    except openai.AuthenticationError as exc:
        raise AgentError("the model endpoint rejected the API key", detail=str(exc)) from None
    except openai.APIConnectionError as exc:
        raise AgentError(f"cannot reach {model.base_url}", detail=str(exc)) from None
    except openai.APIStatusError as exc:
        raise AgentError(f"{model.base_url} answered HTTP {exc.status_code}") from None
    finally:
        await client.close()
    names = {item.id for item in listing.data}
    found = "listed" if model.name in names else "not in its model list"
    return f"{model.base_url} answers; model {model.name} {found}"


ErrorKinds = type[openai.OpenAIError] | tuple[type[openai.OpenAIError], ...]
_REASONS: tuple[tuple[ErrorKinds, str], ...] = (
    (openai.APITimeoutError, "The model did not answer in time."),  # before its base class
    (openai.APIConnectionError, "The model endpoint could not be reached."),
    (
        (openai.AuthenticationError, openai.PermissionDeniedError),
        "The model provider rejected the API key.",
    ),
    (
        openai.RateLimitError,
        "The model provider is rate-limiting requests; please try again shortly.",
    ),
)


def endpoint_reason(exc: BaseException) -> str | None:
    """A short user-facing reason for an error of the endpoint (design §6): ``""`` for one
    with nothing more specific to say, ``None`` when ``exc`` is not the endpoint's."""
    for kinds, reason in _REASONS:
        if isinstance(exc, kinds):
            return reason
    if isinstance(exc, openai.APIStatusError):
        side = "had a server error" if exc.status_code >= 500 else "refused the request"
        return f"The model provider {side} (HTTP {exc.status_code})."
    return "" if isinstance(exc, openai.OpenAIError) else None
