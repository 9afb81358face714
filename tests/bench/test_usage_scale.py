"""The usage benchmark (``bench/usage_scale.py``), small: it fills a fresh SQLite store and a
fresh PostgreSQL schema, times every query it reports, and folding keeps the totals. No speed
is asserted."""

from __future__ import annotations

from bench.usage_scale import run, table
from tests.postgres import require_postgres

TIMED = (
    "totals by user", "totals by chat", "totals by channel", "totals by model",
    "over_time 30 days", "budget check", "fold", "90 days by user, folded",
)  # fmt: skip


async def test_a_small_run_times_each_query_on_both_backends_and_folding_keeps_totals() -> None:
    results = await run(3000, require_postgres(), runs=1, checks=5)
    assert [r["backend"] for r in results] == ["sqlite", "postgres"]
    for result in results:
        assert result["totals_kept"] is True, result
        assert result["rows_folded"] > 1000, result  # most of the 90 days are older than 35
        assert all(result[name]["p50_ms"] >= 0 for name in TIMED), result
    shown = table(3000, results)
    assert shown.count("totals kept: True") == 2
    assert "budget check" in shown
