"""How operator commands print: aligned tables for a terminal, JSON for scripts.

Plain text with padded columns (no table library): it reads well in a terminal, over ssh and
in ``journalctl``-style pipes, and ``--json`` is the stable form for scripts. The cells, JSON
forms and trace text are the console's too (``bot.operator.labels``); printing is the CLI's.

Names, ids, errors and file names come from strangers and from the model, so every line is
printed through ``say`` (one line) or ``show`` (a block whose rows were escaped), and ``table``
escapes each cell: a control character shows as ``\\x1b`` and never reaches the terminal.
``--json`` keeps every value exact (``print_json`` writes the odd characters as ``\\uXXXX``).
"""

from __future__ import annotations

import json

from bot.text.escape import escape_controls, escape_json_text, escape_lines


def print_json(value: object) -> None:
    print(escape_json_text(json.dumps(value, indent=2, ensure_ascii=False)))


def say(line: str) -> None:
    """Print one line; any control character in it is shown escaped."""
    print(escape_controls(line))


def show(block: str) -> None:
    """Print lines that were escaped one by one (``table``); newlines between them stay."""
    print(escape_lines(block))
