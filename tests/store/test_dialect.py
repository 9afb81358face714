"""SQL written once for both backends: PostgreSQL's spelling of its placeholders."""

from __future__ import annotations

from store.postgres.db import native


def test_positional_placeholders_become_psycopg_ones() -> None:
    assert native("SELECT * FROM t WHERE a = ? AND b = ?", (1, 2)) == (
        "SELECT * FROM t WHERE a = %s AND b = %s"
    )


def test_a_literal_percent_is_escaped_for_psycopg() -> None:
    assert native("SELECT '100%' WHERE a = ?", (1,)) == "SELECT '100%%' WHERE a = %s"
    assert native("SELECT '100%'", ()) == "SELECT '100%%'"


def test_named_parameters_are_left_as_psycopg_spells_them() -> None:
    sql = "SELECT 1 WHERE owner = %(me)s"
    assert native(sql, {"me": "r1"}) == sql
