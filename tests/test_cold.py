"""The cold process: what a command's imports load (never a timing; bench/cold.py times)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import gitmem
from gitmem import cli
from gitmem.adapters import claude_code, schemas

HEAVY = ("gitmem.sandbox", "gitmem.holder", "gitmem.adapters", "gitmem.sync", "dulwich.client")


def _loaded(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.splitlines()[-1])


@pytest.mark.parametrize("code", ["import gitmem.cli", "import gitmem", "import gitmem.store"])
def test_reading_loads_no_holder_sandbox_adapter_or_sync(code: str) -> None:
    """The CLI, the package and the store import none of what only agents and sync use."""
    loaded = _loaded(code)
    assert "gitmem" in loaded
    heavy = [m for m in loaded if m.startswith(HEAVY)]
    assert heavy == []


def test_a_repository_opens_without_them(tmp_path: object) -> None:
    """Opening a repository and reading a store's history loads none of them either."""
    loaded = _loaded(
        "from gitmem import Repository\n"
        "from gitmem.types import Author\n"
        f"r = Repository.init({str(tmp_path)!r})\n"
        "print(r.stores())\n"
    )
    assert "gitmem.repository" in loaded
    assert [m for m in loaded if m.startswith(HEAVY)] == []


def test_the_package_names_resolve_when_used() -> None:
    """Every name of ``__all__`` resolves, to the object its module defines."""
    from gitmem.holder import Holder
    from gitmem.sandbox import Sandbox

    for name in gitmem.__all__:
        assert getattr(gitmem, name) is not None, name
    assert gitmem.Holder is Holder
    assert gitmem.Sandbox is Sandbox
    assert set(gitmem.__all__) <= set(dir(gitmem))
    with pytest.raises(AttributeError):
        _ = gitmem.NoSuchName  # type: ignore[attr-defined]


def test_the_cli_choices_match_the_adapters() -> None:
    """The choices the CLI names without importing the adapters are theirs."""
    assert cli.TOOL_FORMATS == schemas.FORMATS
    assert tuple(claude_code.EVENTS) == cli.HOOK_EVENTS
