"""The public front: ``__all__`` is sorted, complete and safe; every error states its kind."""

from __future__ import annotations

import inspect

import pytest

import gitmem
from gitmem import errors


def test_all_is_sorted_and_every_name_exists() -> None:
    """``gitmem.__all__`` is sorted and each name in it is importable."""
    assert gitmem.__all__ == sorted(gitmem.__all__)
    for name in gitmem.__all__:
        assert hasattr(gitmem, name), name


def test_all_holds_every_error_and_the_sandbox_values() -> None:
    """Every error class, the sandbox and its results are public."""
    for name in errors.__all__:
        assert name in gitmem.__all__, name
    for name in ("Sandbox", "ProgramResult", "View", "Holder", "ToolResult", "Limits"):
        assert name in gitmem.__all__


def test_nothing_public_writes_past_the_limits() -> None:
    """The raw store change and snapshot types are not part of the public front."""
    assert "Change" not in gitmem.__all__
    assert "Snapshot" not in gitmem.__all__


@pytest.mark.parametrize("name", errors.__all__)
def test_every_error_states_its_kind(name: str) -> None:
    """Each error class declares its own tool-result kind, under the one root."""
    cls = getattr(errors, name)
    assert issubclass(cls, gitmem.GitmemError)
    assert "kind" in vars(cls), name


def test_an_error_class_without_a_kind_is_refused() -> None:
    """A new error class that does not state its kind fails when it is defined."""
    with pytest.raises(TypeError, match="must state its tool-result kind"):
        type("Careless", (gitmem.GitmemError,), {})


def test_code_and_launch_refusals_are_invalid_arguments() -> None:
    """A code half that does not compile and a refused launch are the caller's input."""
    assert issubclass(gitmem.CodeError, gitmem.InvalidArgument)
    assert issubclass(gitmem.LaunchRefused, gitmem.InvalidArgument)


def test_every_error_is_drawn_in_the_tree() -> None:
    """The docstring of ``gitmem.errors`` draws every class it defines."""
    doc = inspect.getdoc(errors) or ""
    for name in errors.__all__:
        assert f" {name}" in doc, name


def test_one_serialisation_name_and_its_old_aliases() -> None:
    """Public values serialise with ``to_dict()``; the names earlier versions used agree."""
    totals = gitmem.Totals(1, 2, 3)
    assert totals.to_dict() == totals.as_dict() == {"count": 1, "chars": 2, "lines": 3}
    for cls in (gitmem.Revision, gitmem.FileRevision):
        assert cls.event is not cls.to_dict
        assert "to_dict" in inspect.getsource(cls.event)
