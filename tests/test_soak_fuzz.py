"""Fuzz: hypothesis-made tool calls under every strategy (every tool, tools that are not
offered, hostile strings, huge and empty inputs, wrong types, missing and extra
arguments): no call raises, and every refusal, like every read, leaves the
repository's refs and objects exactly as they were."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from conftest import capability
from helpers_soak import report, size
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem import Agent, Holder, Repository, strategies

pytestmark = pytest.mark.soak

CALLS_PER_EXAMPLE = 25
LIMITS = {
    "maxCount": 6,
    "maxLenPerMemory": 400,
    "maxTotalLen": 2000,
    "maxLenIndex": 1000,
    "maxLenDescription": 120,
    "maxResults": 5,
}
NAMES = ["alpha", "beta", "gamma.md", "a_b-c.1", "x" * 64]
"""Valid names, so that some calls succeed and later ones meet existing memories."""
HOSTILE = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "\ud800",
    "lone \udfff surrogate",
    "\u202eevil\u202c",
    "\u200f\u05e9\u05dc\u05d5\u05dd",
    "\ufeffbom",
    "..",
    ".",
    "../x",
    "../../etc/passwd",
    "a/../b",
    "/abs",
    "a/b",
    "a\\b",
    "a\nb",
    "slug\n",
    "line\r\nbreak",
    "-",
    ".git",
    "HEAD",
    "refs/heads/main",
    "x" * 65,
    "é" * 64,
    "🙂" * 40,
    "Fact: the staging cluster rolls in batches.",
    "---\nname: x\n---\n",
    "x" * 100_000,
    "y" * 1_000_000,
]
FITTING = [
    "Fact: the staging cluster rolls in batches of five.",
    "Decision: errors are {error: {code, message}}.",
    "# Notes\n\n- drain the canary\n- roll the rest\n",
    "alpha beta",
]
EVERY_TOOL = sorted({t.name for n in strategies.names() for t in strategies.get(n).tools})  # type: ignore[union-attr]


def _state(directory: str) -> tuple[dict[str, bytes], frozenset[str]]:
    """Every ref file's bytes, and the name of every file under objects/ (loose objects
    and packs are named by their content, so a set of names is the object set)."""
    refs: dict[str, bytes] = {}
    for base in ("refs", "packed-refs"):
        path = Path(directory, base)
        found = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        for p in found:
            refs[str(p.relative_to(directory))] = p.read_bytes()
    objects = Path(directory, "objects")
    names = frozenset(str(p.relative_to(objects)) for p in objects.rglob("*") if p.is_file())
    return refs, names


texts = st.one_of(
    st.sampled_from(NAMES),
    st.sampled_from(HOSTILE),
    st.text(max_size=40),
    st.text(st.characters(codec=None, categories=["Cs", "Cc", "Cf", "Zl", "Zp"]), max_size=8),
)
wrong_types = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**63),
    st.floats(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.binary(max_size=4),
)


def _value(schema: Mapping[str, Any]) -> st.SearchStrategy[object]:
    """Mostly the schema's type (hostile content included), sometimes a wrong type."""
    kind = schema.get("type")
    if "enum" in schema:
        right: st.SearchStrategy[object] = st.one_of(st.sampled_from(schema["enum"]), texts)
    elif kind == "array":
        right = st.lists(texts, max_size=4)
    elif kind == "boolean":
        right = st.booleans()
    elif kind == "integer":
        right = st.integers()
    else:
        right = texts
    return st.one_of(right, right, right, wrong_types)


def _fitting(key: str, schema: Mapping[str, Any]) -> st.SearchStrategy[object]:
    """A value that fits the schema and the limits, so that the call may well succeed."""
    kind = schema.get("type")
    if key in ("name", "source", "target", "project"):
        return st.sampled_from(NAMES[:4])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if kind == "array":
        return st.lists(st.sampled_from(NAMES[:4]), min_size=1, max_size=3)
    if kind == "boolean":
        return st.booleans()
    return st.sampled_from(NAMES[:4] + FITTING)


@st.composite
def _call(draw: st.DrawFn, holder: Holder) -> tuple[str, object]:
    tools = {t["name"]: t["input_schema"] for t in holder.tools()}
    if draw(st.integers(0, 2)) == 0:  # a well-formed call
        name = draw(st.sampled_from(sorted(tools)))
        schema = tools[name]
        required = set(schema.get("required", []))
        return name, {
            key: draw(_fitting(key, sub))
            for key, sub in schema["properties"].items()
            if key in required or draw(st.booleans())
        }
    name = draw(
        st.one_of(
            st.sampled_from(sorted(tools)),
            st.sampled_from(sorted(tools)),
            st.sampled_from(sorted(tools)),
            st.sampled_from(EVERY_TOOL),
            texts,
        )
    )
    schema = tools.get(name) or tools[draw(st.sampled_from(sorted(tools)))]
    required = set(schema.get("required", []))
    args: dict[str, object] = {}
    for key, sub in schema["properties"].items():
        if draw(st.integers(0, 9)) < (9 if key in required else 5):  # sometimes missing
            args[key] = draw(_value(sub))
    if draw(st.integers(0, 9)) == 0:
        args.update(draw(st.dictionaries(texts, st.one_of(texts, wrong_types), max_size=2)))
    if draw(st.integers(0, 49)) == 0:  # not an object at all
        return name, draw(st.one_of(st.lists(texts, max_size=2), texts, st.integers()))
    return name, args


def _writes(holder: Holder, name: str) -> bool:
    strategy = holder.capability.strategy
    tool = {t.name: t for t in strategy.tools}.get(name)
    return tool is not None and tool.writes


@pytest.mark.parametrize("strategy", strategies.names())
def test_fuzzed_tool_calls_never_raise_and_refusals_change_nothing(strategy: str) -> None:
    """Hypothesis-made calls: each returns a result; a refusal or a read leaves refs and
    objects byte-identical; the holder still renders its prompt, block and state."""
    examples = size(8, 10_000 // (CALLS_PER_EXAMPLE * len(strategies.names())))
    tally = {"calls": 0, "ok": 0, "refused": 0}

    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data(), limited=st.booleans())
    def run(data: st.DataObject, limited: bool) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            repo = Repository.init(os.path.join(tmp, "mem.git"))
            cap = capability(strategy, "isolated", **(LIMITS if limited else {}))
            holder = repo.bind(cap, Agent("fuzz", "f-1", started_as="root"))
            assert holder is not None
            try:
                for _ in range(CALLS_PER_EXAMPLE):
                    name, args = data.draw(_call(holder))
                    before = _state(repo.directory)
                    result = holder.call(name, args)  # type: ignore[arg-type]
                    tally["calls"] += 1
                    tally["ok" if result.ok else "refused"] += 1
                    assert isinstance(result.text, str) and result.text
                    if not result.ok or not _writes(holder, name):
                        assert _state(repo.directory) == before, (name, args, result)
                    if not result.ok:
                        assert result.kind != "io-error", result.text
                holder.system_prompt()
                holder.pinned_block()
                holder.notices()
                holder.state()
            finally:
                holder.close()
                repo.close()

    started = time.monotonic()
    run()
    # hypothesis may also run examples it then discards (their calls ran all the same)
    assert tally["calls"] >= examples * CALLS_PER_EXAMPLE
    assert tally["ok"] > 0 and tally["refused"] > 0
    report(
        f"fuzz {strategy}: {tally['calls']} calls, {tally['ok']} ok, {tally['refused']} "
        f"refused, 0 raised, every refusal and read byte-identical; "
        f"{time.monotonic() - started:.1f} s"
    )


@pytest.mark.parametrize("arguments", [[1, 2], "alpha", 5, ["name", "alpha"]])
def test_arguments_that_are_not_an_object_are_refused(repo: Repository, arguments: object) -> None:
    """A harness that passes a model's non-object JSON straight on gets a refusal."""
    holder = repo.bind(capability("markdown"), Agent("fuzz", "f-1", started_as="root"))
    assert holder is not None
    result = holder.call("read_memory", arguments)  # type: ignore[arg-type]
    assert (result.ok, result.kind) == (False, "invalid-argument")
    assert result.text.startswith("`read_memory` takes its arguments as one object")
    assert type(arguments).__name__ in result.text
