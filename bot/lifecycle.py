"""``async with`` for resources that have ``start()`` and ``aclose()`` (design §18 (P5)).

If ``start`` fails, ``aclose`` still runs before the error propagates, so a half-opened
resource never leaks (PTB ``Application.__aenter__``).
"""

from __future__ import annotations

from types import TracebackType
from typing import Self


class StartClose:
    async def start(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
