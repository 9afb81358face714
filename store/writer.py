"""The SQLite connection's own thread: statements issued together run and commit together.

aiosqlite (which the agent's checkpointer uses) hands every statement to its thread and every
result back on its own: a queue put, a thread wake-up and a loop wake-up per statement, the
event loop and the worker taking turns for the GIL each time. Here the event loop gathers what
its coroutines issue during one iteration into one job, and the thread runs, per wake-up,
every job queued by then:

- consecutive autocommit statements run in one ``BEGIN IMMEDIATE … COMMIT`` (a group commit);
- a statement that fails inside a group is undone alone (SQLite's statement-level rollback for
  constraint errors), the others still commit; an error that ends the whole transaction
  (I/O, full disk) fails every statement of the group that ran with it;
- nobody is answered before the ``COMMIT`` of their statement returned, so what a caller was
  told is written is on disk as a lone autocommit statement would be (WAL,
  ``synchronous=NORMAL``);
- statements of an explicit transaction (``grouped=False``: its ``BEGIN``, body, ``COMMIT``)
  and ``PRAGMA`` statements (several are no-ops or errors inside a transaction) run as they
  are, in order, never inside a group;
- all results of a wake-up go back to the loop in one ``call_soon_threadsafe``.

A caller that stops waiting does not stop its statement: it was queued, it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import queue
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)

Params = Sequence[object]
"""What sqlite3 cannot bind fails the statement's caller, as any other error would."""


class OpKind(enum.Enum):
    ROWS = "rows"  # a query, or a statement with RETURNING: its rows
    MANY = "many"  # one statement for each parameter row
    WRITE = "write"  # a statement's row count
    ROLLBACK = "rollback"  # end an open transaction, if there is one


@dataclass(slots=True, kw_only=True)
class Op:
    kind: OpKind
    sql: str = ""
    params: Params = ()
    many: list[Params] = field(default_factory=list)
    grouped: bool = True
    """An autocommit statement that may share a transaction with its neighbours."""
    future: asyncio.Future[object] = field(repr=False)

    @property
    def groupable(self) -> bool:
        return self.grouped and self.kind is not OpKind.ROLLBACK and not _is_pragma(self.sql)

    @property
    def reads_only(self) -> bool:
        return self.kind is OpKind.ROWS and self.sql.lstrip()[:6].upper() == "SELECT"


def _is_pragma(sql: str) -> bool:
    return sql.lstrip()[:6].upper() == "PRAGMA"


Outcome = tuple[asyncio.Future[object], object, BaseException | None]
_STOP = None


class Writer:
    """One ``sqlite3`` connection, used only on this object's thread."""

    def __init__(self, path: Path, *, busy_timeout_s: float) -> None:
        self._path = path
        self._busy_timeout_s = busy_timeout_s
        self._jobs: queue.SimpleQueue[list[Op] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.wakeups = 0
        """How many times the thread woke up for work (tests read it)."""

    async def open(self) -> None:
        """Start the thread and connect; raises what ``sqlite3.connect`` raised."""
        opened: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        self._thread = threading.Thread(
            target=self._serve, args=(opened,), name="store-writer", daemon=True
        )
        self._thread.start()
        try:
            await asyncio.shield(opened)
        except BaseException:
            self._jobs.put(_STOP)
            raise

    def submit(self, ops: list[Op]) -> None:
        self._jobs.put(ops)

    async def close(self) -> None:
        """Run what was submitted, close the connection, end the thread."""
        self._jobs.put(_STOP)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)

    # ------------------------------------------------------------------ the thread

    def _serve(self, opened: asyncio.Future[object]) -> None:
        try:
            conn = sqlite3.connect(self._path, isolation_level=None, timeout=self._busy_timeout_s)
        except (sqlite3.Error, OSError) as exc:
            _post(opened.get_loop(), [(opened, None, exc)])
            return
        conn.row_factory = sqlite3.Row
        _post(opened.get_loop(), [(opened, None, None)])
        statements = _Statements(conn, self._path)
        try:
            while (ops := self._take()) is not None:
                self.wakeups += 1
                _deliver(statements.guarded(ops))
        finally:
            conn.close()

    def _take(self) -> list[Op] | None:
        """Block for a job, then take every job queued behind it; ``None`` once stopped."""
        first = self._jobs.get()
        if first is _STOP:
            return None
        ops = list(first)
        while True:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                return ops
            if job is _STOP:
                self._jobs.put(_STOP)  # seen again at the next take, after these run
                return ops
            ops.extend(job)


class _Statements:
    """Runs jobs on the writer's thread (never elsewhere)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self._path = path

    def guarded(self, ops: list[Op]) -> list[Outcome]:
        """``run``; a failure of this code itself fails the job instead of the thread."""
        try:
            return self.run(ops)
        except Exception as exc:
            logger.exception("store %s: the writer failed a job", self._path)
            return [(op.future, None, exc) for op in ops]

    def run(self, ops: list[Op]) -> list[Outcome]:
        outcomes: list[Outcome] = []
        start = 0
        while start < len(ops):
            end = start + 1
            if ops[start].groupable:
                while end < len(ops) and ops[end].groupable:
                    end += 1
            outcomes.extend(self._run_group(ops[start:end]))
            start = end
        return outcomes

    def _run_group(self, group: list[Op]) -> list[Outcome]:
        conn = self._conn
        alone = len(group) == 1 or conn.in_transaction or all(op.reads_only for op in group)
        if alone:
            return [self._run_alone(op) for op in group]
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            return [(op.future, None, exc) for op in group]
        outcomes: list[Outcome] = []
        for index, op in enumerate(group):
            try:
                outcomes.append((op.future, self._perform(op), None))
            except Exception as exc:  # noqa: BLE001 - handed to the statement's caller
                if not conn.in_transaction:  # the error ended the transaction: all of it is gone
                    failed = [(o.future, None, exc) for o in group[: index + 1]]
                    return failed + self.run(group[index + 1 :])
                outcomes.append((op.future, None, exc))  # undone alone; the group goes on
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback_quietly()
            return [(op.future, None, exc) for op in group]
        return outcomes

    def _run_alone(self, op: Op) -> Outcome:
        try:
            return (op.future, self._perform(op), None)
        except Exception as exc:  # noqa: BLE001 - handed to the statement's caller
            return (op.future, None, exc)

    def _perform(self, op: Op) -> object:
        conn = self._conn
        if op.kind is OpKind.ROWS:
            return conn.execute(op.sql, op.params).fetchall()
        if op.kind is OpKind.MANY:
            conn.executemany(op.sql, op.many).close()
            return None
        if op.kind is OpKind.WRITE:
            cursor = conn.execute(op.sql, op.params)
            changed = cursor.rowcount
            cursor.close()
            return changed
        conn.rollback()
        return None

    def _rollback_quietly(self) -> None:
        try:
            self._conn.rollback()
        except sqlite3.Error:
            logger.exception("store %s: rollback after a failed commit failed", self._path)


def _deliver(outcomes: list[Outcome]) -> None:
    """Hand each loop its results in one wake-up."""
    by_loop: dict[asyncio.AbstractEventLoop, list[Outcome]] = {}
    for outcome in outcomes:
        by_loop.setdefault(outcome[0].get_loop(), []).append(outcome)
    for loop, batch in by_loop.items():
        _post(loop, batch)


def _post(loop: asyncio.AbstractEventLoop, batch: list[Outcome]) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
        loop.call_soon_threadsafe(_settle, batch)


def _settle(batch: list[Outcome]) -> None:
    for future, value, error in batch:
        if future.done():  # its caller stopped waiting (cancelled)
            continue
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)
