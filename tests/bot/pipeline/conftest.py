"""Fixtures of the pipeline tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.postgres import fresh_schema, require_postgres


@pytest.fixture
async def schema() -> AsyncIterator[tuple[str, str]]:
    """The test server's URL and a schema of this test's own."""
    url = require_postgres()
    async with fresh_schema(url) as name:
        yield url, name
