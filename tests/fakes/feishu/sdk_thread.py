"""The real ``lark.ws.Client`` on a thread of its own, per design §17.3's recipe.

``start()`` blocks forever and uses the module global ``lark_oapi.ws.client.loop``, so the
thread makes a loop, installs it there, builds the client on that thread and calls
``start()``. ``stop()`` is the verified private-API stop: no auto-reconnect, disconnect on
the client's loop, stop the loop, then cancel what is left and close it. It logs a harmless
ERROR ("receive message loop exit"). Tests use this to prove the fake against the SDK.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import lark_oapi as lark  # type: ignore[import-untyped]
import lark_oapi.ws.client as ws_client  # type: ignore[import-untyped]


class LarkWsThread:
    def __init__(self, app_id: str, app_secret: str, *, domain: str, handler: Any) -> None:
        self._args = (app_id, app_secret)
        self._domain = domain
        self._handler = handler
        self.client: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lark-ws", daemon=True)
        self._previous_loop: Any = ws_client.loop

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(5):
            raise TimeoutError("lark ws thread did not start")

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        ws_client.loop = loop  # the one monkeypatch the recipe needs
        self.loop = loop
        self.client = lark.ws.Client(
            *self._args,
            event_handler=self._handler,
            domain=self._domain,
        )
        self._ready.set()
        try:
            self.client.start()
        except RuntimeError:
            pass  # "Event loop stopped before Future completed." - how stop() ends start()
        except Exception as error:  # noqa: BLE001 - handed to the test
            self.error = error
        finally:
            leftovers = asyncio.all_tasks(loop)
            for task in leftovers:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
            loop.close()

    def join(self, timeout: float = 5.0) -> None:
        """Wait for the thread to end by itself (``start()`` raised)."""
        self._thread.join(timeout)

    def stop(self) -> None:
        loop, client = self.loop, self.client
        if self._thread.is_alive() and loop is not None and client is not None:
            client._auto_reconnect = False
            future = asyncio.run_coroutine_threadsafe(client._disconnect(), loop)
            future.result(timeout=5)
            loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=5)
        ws_client.loop = self._previous_loop
        if self._thread.is_alive():
            raise RuntimeError("lark ws thread did not stop")
