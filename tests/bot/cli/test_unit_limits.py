"""What the units promise beyond starting the daemon: a crash loop ends ``failed``, the state
is private, and a ``--user`` unit keeps it in ``~/.local/state`` on every systemd version."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.unit import DEFAULT_PROGRAM, plan_unit, render_unit

REPO = Path(__file__).resolve().parents[3]
REPOSITORY_UNITS = ("switchboard.service", "switchboard@.service")


def _sections(text: str) -> dict[str, dict[str, list[str]]]:
    """A unit as systemd reads it: section → key → every value (keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key, []).append(value)
    return sections


def _seconds(section: dict[str, list[str]], key: str) -> int:
    (value,) = section[key]
    return int(value)


def _rendered(*, user: bool, instance: str | None) -> str:
    home = Path("/home/ops")
    plan = plan_unit(user=user, instance=instance, config=None, home=home)
    return render_unit(plan, (DEFAULT_PROGRAM,))


UNITS = {
    "repo-system": (REPO / "systemd" / "switchboard.service").read_text(),
    "repo-template": (REPO / "systemd" / "switchboard@.service").read_text(),
    "user": _rendered(user=True, instance=None),
    "user-template": _rendered(user=True, instance="NAME"),
}


@pytest.mark.parametrize("name", sorted(UNITS))
def test_a_crash_loop_ends_failed(name: str) -> None:
    """systemd counts starts, restarts included, and refuses the (burst+1)th within the
    interval. With ``RestartSec=5`` its default (5 in 10 s) is never reached; the unit's own
    limit must catch a crash at every start, and also a daemon hanging at each start until
    ``TimeoutStartSec`` kills it."""
    unit = _sections(UNITS[name])
    interval = _seconds(unit["Unit"], "StartLimitIntervalSec")
    burst = _seconds(unit["Unit"], "StartLimitBurst")
    restart = _seconds(unit["Service"], "RestartSec")
    start_timeout = _seconds(unit["Service"], "TimeoutStartSec")
    assert unit["Service"]["Restart"] == ["on-failure"]
    assert 3 <= burst <= 10
    assert burst * (start_timeout + restart) < interval
    assert interval <= 3600  # and a crash once an hour is not a loop


@pytest.mark.parametrize("name", ["repo-system", "repo-template"])
def test_the_system_state_directory_is_private(name: str) -> None:
    service = _sections(UNITS[name])["Service"]
    assert service["StateDirectoryMode"] == ["0700"]
    assert service["UMask"] == ["0077"]


@pytest.mark.parametrize(
    ("name", "state"),
    [
        ("user", "%h/.local/state/switchboard"),
        ("user-template", "%h/.local/state/switchboard/%i"),
    ],
)
def test_a_user_unit_keeps_its_state_in_local_state(name: str, state: str) -> None:
    """systemd 252 maps ``StateDirectory=`` and ``%S`` of a user unit to ``~/.config``."""
    text = UNITS[name]
    service = _sections(text)["Service"]
    assert "StateDirectory" not in service
    assert not [line for line in text.splitlines() if "%S" in line and not line.startswith("#")]
    assert f"SWITCHBOARD_STATE_DIR={state}" in service["Environment"]
