"""Secret scanning: the detectors on the corpus, and every write path refusing a
credential (tool call, program, CLI, file store, sync merge; the push is in
``test_githooks``), with the allowlist admitting a reviewed false positive."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import assert_fsck, capability, tree_bytes
from helpers_secrets import ORDINARY, SECRETS
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem import Agent, Holder, Repository, ops, secrets
from gitmem.cli import cli
from gitmem.errors import InvalidArgument, SecretFound
from gitmem.sandbox import Sandbox
from gitmem.secrets import Allowlist, check_texts, fingerprint, scan
from gitmem.types import Author, Change, Edit, FileChange, FileEdit, Memory

ME = Author("Operator", "op@example.com")


def _secret_of(text: str) -> str:
    """The credential itself inside a corpus note (its longest token)."""
    return max(text.replace("=", " ").replace('"', " ").split(), key=len)


@pytest.fixture
def holder(repo: Repository) -> Iterator[Holder]:
    bound = repo.bind(capability("markdown"), Agent("p", "i", started_as="root"))
    assert bound is not None
    bound.use_sandbox(Sandbox(time_limit=5.0))
    yield bound
    bound.close()


def test_corpus_is_large_enough() -> None:
    """At least 40 secrets across every kind the issue names, and 200 ordinary notes."""
    assert len(SECRETS) >= 40
    assert len(ORDINARY) >= 200
    kinds = {kind for kind, _ in SECRETS}
    assert len(kinds) == 17


@pytest.mark.parametrize(
    ("kind", "text"), SECRETS, ids=[f"{i}-{k}" for i, (k, _) in enumerate(SECRETS)]
)
def test_every_corpus_secret_is_found_with_its_kind(kind: str, text: str) -> None:
    """Each secret is found once, named by its kind."""
    found = list(scan(text))
    assert [f.kind for f in found] == [kind]


def test_no_ordinary_note_is_flagged() -> None:
    """Code, hashes, UUIDs, image data, commit ids, prose about passwords: all pass."""
    flagged = [note for note in ORDINARY if list(scan(note))]
    assert flagged == []


def test_a_finding_names_line_and_column_in_characters() -> None:
    """line:column is where the secret starts, counted in characters (1-based)."""
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    text = f"first line\nété: {key}\n"
    (found,) = scan(text)
    assert (found.line, found.column) == (2, 6)
    assert found.fingerprint == fingerprint(key)


def test_many_findings_each_name_their_own_line_and_column() -> None:
    """The lines and columns of many credentials in one text, each where it starts
    (the text's lines are counted once, not once per credential)."""
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    lines = [f"{'x' * (n % 7)}{key} and {key}" for n in range(2_000)]
    found = [(f.line, f.column) for f in scan("\n".join(lines))]
    expected = [(n + 1, n % 7 + 1 + k * (len(key) + 5)) for n in range(2_000) for k in (0, 1)]
    assert found == expected


def test_a_text_that_repeats_one_assignment_judges_its_value_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A million characters of ``password=`` over and over start a candidate every nine
    characters, each with the same value of 200 characters: that value is judged once
    (and the shorter ones the text ends with, one each), not once per candidate."""
    judged: list[str] = []
    looks = secrets._looks_random.__wrapped__  # pyright: ignore[reportPrivateUsage, reportFunctionMemberAccess]

    def counted(value: str) -> bool:
        judged.append(value)
        return looks(value)

    monkeypatch.setattr(secrets, "_looks_random", functools.lru_cache(maxsize=256)(counted))
    assert list(scan("password=" * 111_111)) == []
    assert len(judged) == len(set(judged)) <= 1 + 200 // 9


def test_refusal_says_secret_kind_and_place_never_the_secret(
    repo: Repository, holder: Holder
) -> None:
    """A tool call holding a secret is refused as invalid-argument; nothing is written."""
    kind, text = SECRETS[6]
    before = tree_bytes(repo.directory)
    result = holder.call("create_memory", {"name": "n", "description": "d", "body": text})
    assert (result.ok, result.kind) == (False, "invalid-argument")
    assert "secret" in result.text
    assert f"({kind}) starting at 1:" in result.text
    assert _secret_of(text) not in result.text
    assert tree_bytes(repo.directory) == before


@pytest.mark.parametrize("field", ["description", "body"])
def test_every_secret_refused_by_tool_calls(repo: Repository, holder: Holder, field: str) -> None:
    """Each corpus secret, in the description or the body, is refused; none lands."""
    for i, (kind, text) in enumerate(SECRETS):
        args = {"name": f"n{i}", "description": "d", "body": "b"}
        args[field] = text if field == "body" else text.replace("\n", " ")
        result = holder.call("create_memory", args)
        assert result.kind == "invalid-argument", (kind, result.text)
        assert f"({kind})" in result.text
        assert _secret_of(text) not in result.text
    assert repo.stores() == []


def test_edit_that_adds_a_secret_is_refused(repo: Repository, holder: Holder) -> None:
    """An edit is judged on the text it leaves: adding a key is refused."""
    assert holder.call("create_memory", {"name": "n", "description": "d", "body": "key: TBD"}).ok
    _, text = SECRETS[0]
    result = holder.call("edit_memory", {"name": "n", "old_text": "TBD", "new_text": text})
    assert result.kind == "invalid-argument"
    assert repo.snapshot(holder.store_id).get("n") == Memory("n", "d", "key: TBD")


def test_every_secret_refused_in_programs(repo: Repository, holder: Holder) -> None:
    """memories.* from a program: each call throws the refusal; none lands."""
    texts = json.dumps([text for _, text in SECRETS])
    program = (
        'import { memories } from "gitmem";\n'
        f"const texts: string[] = {texts};\n"
        "let refused = 0;\n"
        "texts.forEach((body, i) => {\n"
        "  try { memories.createMemory({name: `n${i}`, description: 'd', body}); }\n"
        "  catch (e) { if (String(e).includes('holds a secret')) refused++; }\n"
        "});\n"
        "console.log(refused);\n"
    )
    result = holder.run_program(program)
    assert result.ok, result.error
    assert result.output == f"{len(SECRETS)}\n"
    assert repo.stores() == []


def test_code_halves_are_scanned(repo: Repository) -> None:
    """A secret in the code or the onUse script is refused like one in the body."""
    bound = repo.bind(capability("scratchpad"), Agent("p", "c", started_as="root"))
    assert bound is not None
    bound.use_sandbox(Sandbox(time_limit=5.0))
    try:
        _, text = SECRETS[20]
        for half in ("code", "onUse"):
            fields = {"name": "tool", "description": "d", "body": "b", half: f"// {text}\n"}
            program = (
                'import { memories } from "gitmem";\n'
                f"try {{ memories.writeMemory({json.dumps(fields)}); }}\n"
                "catch (e) { console.log(String(e)); }\n"
            )
            result = bound.run_program(program)
            half_name = "code" if half == "code" else "onUse script"
            assert f"the {half_name} of `tool` holds a secret" in result.output
        assert repo.stores() == []
    finally:
        bound.close()


def test_every_secret_refused_by_the_cli(repo: Repository) -> None:
    """`gitmem create` (operator edits) refuses each: exit 1, one line, nothing written."""
    runner = CliRunner()
    for kind, text in SECRETS:
        result = runner.invoke(
            cli,
            ["--repo", repo.directory, "create", "--store", "notes", "n", "-d", "d"],
            input=text,
        )
        assert result.exit_code == 1
        assert f"({kind})" in result.output
        assert _secret_of(text) not in result.output
    assert repo.stores() == []


def test_every_secret_refused_in_a_file_store(repo: Repository) -> None:
    """File stores (the memory-tool backend, observation logs) are scanned too."""
    for i, (kind, text) in enumerate(SECRETS):
        change = FileChange((FileEdit("create", f"notes/n{i}.md", text),))
        with pytest.raises(SecretFound) as caught:
            repo.publish_files("files", ME, lambda _, c=change: c)
        assert caught.value.kind_of_secret == kind
        assert "a file store keeps no allowlist" in str(caught.value)
    assert repo.stores() == []


def test_every_secret_refused_in_a_sync_merge(repo: Repository) -> None:
    """A merge (as sync makes it) that would bring a secret in is refused."""
    ours = ops.create(repo, "notes", ME, "a", "d", "ours\n").commit
    repo.fork("notes", "side")
    theirs = ops.create(repo, "side", ME, "b", "d", "theirs\n").commit
    for kind, text in SECRETS:
        edit = Edit("create", "b", Memory("b", "d", text))
        with pytest.raises(SecretFound) as caught:
            repo.merge("notes", ME, ours, theirs, [edit], {})
        assert caught.value.kind_of_secret == kind
    assert repo.head("notes") == ours


def test_allowlist_admits_a_reviewed_false_positive(repo: Repository, tmp_path: Path) -> None:
    """The operator allows a fingerprint (one commit, in the store); then it passes,
    and other secrets are still refused."""
    ops.create(repo, "notes", ME, "a", "d", "first\n")
    sample = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key id
    with pytest.raises(SecretFound) as caught:
        ops.create(repo, "notes", ME, "aws-docs", "d", f"the docs use {sample}\n")
    print_fp = caught.value.fingerprint
    runner = CliRunner()
    result = runner.invoke(
        cli,
        [
            "--repo",
            repo.directory,
            "guard",
            "allow",
            print_fp,
            "--store",
            "notes",
            "--note",
            "AWS docs' sample",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output == f"{print_fp} allowed in notes\n"
    listed = runner.invoke(
        cli, ["--repo", repo.directory, "guard", "allowlist", "--store", "notes", "--json"]
    )
    assert json.loads(listed.output) == [print_fp]
    ops.create(repo, "notes", ME, "aws-docs", "d", f"the docs use {sample}\n")
    with pytest.raises(SecretFound):
        ops.create(repo, "notes", ME, "real", "d", SECRETS[5][1])
    # the allowlist is versioned in the store, and the store's telemetry is unmoved by it
    assert repo.snapshot("notes").meta("@allowlist") == f"{print_fp}  # AWS docs' sample\n"
    assert [r.slug for r in repo.revisions("notes")] == ["a", "aws-docs"]
    assert repo.check() == []
    assert_fsck(repo.directory)


def test_allowlist_format_is_checked() -> None:
    """A line that is not a fingerprint is refused, naming the line."""
    assert Allowlist.parse("# note\n\n0123456789abcdef  # why\n").fingerprints == {
        "0123456789abcdef"
    }
    with pytest.raises(InvalidArgument, match="allowlist line 2 is not a fingerprint"):
        Allowlist.parse("0123456789abcdef\nAKIAIOSFODNN7EXAMPLE\n")


def test_scan_is_linear_on_hostile_text() -> None:
    """Text packed with anchors is scanned in one pass (no backtracking blow-up)."""
    hostile = ("eyJ" + "a" * 50 + " ") * 2000 + ("password=" * 5000) + ("://a:" * 5000)
    assert list(scan(hostile)) == []
    jwts = ("eyJ" + "a" * 20 + ".") * 3000
    assert len(list(scan(jwts))) == 1000  # header.payload.signature, three segments each


def test_a_change_made_outside_the_builders_is_scanned(repo: Repository) -> None:
    """The store refuses whatever its caller built: the scan sits at publish itself."""
    memory = Memory("x", "d", SECRETS[3][1])
    with pytest.raises(SecretFound):
        repo.publish("notes", ME, lambda _: Change("create", "x", memory))
    assert repo.stores() == []


def test_onuse_scripts_are_scanned(repo: Repository) -> None:
    """memories.* from an onUse script meets the same scan (run at the end of a turn)."""
    bound = repo.bind(capability("scratchpad"), Agent("p", "u", started_as="root"))
    assert bound is not None
    bound.use_sandbox(Sandbox(time_limit=5.0))
    try:
        text = next(t for _, t in SECRETS if "ghp_" in t)
        cut = text.index("ghp_") + 8  # the script assembles the token when it runs
        on_use = (
            f"const body = {json.dumps(text[:cut])} + {json.dumps(text[cut:])};\n"
            "try { memories.writeMemory({name: 'leak', description: 'd', body}); }\n"
            "catch (e) { views.openText('onuse', String(e)); }\n"
        )
        fields = {
            "name": "tool",
            "description": "d",
            "body": "b",
            "code": "export function one(): number { return 1; }\n",
            "onUse": on_use,
        }
        wrote = bound.run_program(
            f'import {{ memories }} from "gitmem";\nmemories.writeMemory({json.dumps(fields)});\n'
        )
        assert wrote.ok, wrote.error
        used = bound.run_program('import { tool } from "gitmem";\nconsole.log(tool.one());\n')
        assert used.output == "1\n"
        bound.end_turn()
        views = [v for v in bound.take_views() if v.title == "onuse"]
        assert len(views) == 1 and "holds a secret (GitHub token)" in views[0].text
        assert _secret_of(text) not in views[0].text
        assert repo.snapshot(bound.store_id).get("leak") is None
    finally:
        bound.close()


# -- offsets in the original text, whatever comes before ------------------------------

_KEY = "AKIA" + "ABCDEFGHIJKLMNOP"
_AWS_VALUE = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Ex9mP2a"
_PLANTED = [
    ("AWS access key id", f"key {_KEY} here", _KEY),
    ("AWS secret access key", f"aws_secret_access_key = {_AWS_VALUE}", _AWS_VALUE),
    ("password/secret/token assignment", "password = 'Xk9#mP2$vL8qR4wZ'", "Xk9#mP2$vL8qR4wZ"),
    ("password/secret/token assignment", "API_TOKEN: Zq7Lm2Nx9Pw4Rt6Y", "Zq7Lm2Nx9Pw4Rt6Y"),
]


def _offset(text: str, line: int, column: int) -> int:
    """The character offset a 1-based ``line:column`` names in ``text``."""
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    return starts[line - 1] + column - 1


def test_a_dotted_capital_i_before_a_secret_hides_nothing() -> None:
    """'İ'.lower() is two characters: offsets still point into the original text."""
    for kind, line, secret in _PLANTED:
        text = "İİİ\n" * 5 + "İ " + line
        found = [f for f in scan(text) if f.kind == kind]
        assert found, kind
        assert text[_offset(text, found[0].line, found[0].column) :].startswith(secret)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    # any character, with the ones whose case folding changes length or script well
    # represented (İ lower-cases to two characters; K, ß and Σ fold in other ways)
    prefix=st.lists(st.characters() | st.sampled_from("İİ\nKßẞΣ"), max_size=80).map("".join),
    same_line=st.booleans(),
    planted=st.sampled_from(_PLANTED),
)
def test_text_before_a_secret_never_hides_it(
    prefix: str, same_line: bool, planted: tuple[str, str, str]
) -> None:
    """Any Unicode text before a secret (on earlier lines, or earlier on its line after
    a space) leaves it found, and line:column points at its first character."""
    kind, line, secret = planted
    if same_line:
        prefix = prefix.replace("\n", " ")
    text = prefix + (" " if same_line else "\n") + line
    at = len(text) - len(line) + line.index(secret)
    spots = {_offset(text, f.line, f.column) for f in scan(text) if f.kind == kind}
    assert at in spots, (kind, prefix)


# -- names and commit text are scanned --------------------------------------------------

_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


def test_a_secret_as_a_slug_is_refused_without_repeating_it(
    repo: Repository, holder: Holder
) -> None:
    """A credential as a memory's name (a create or a rename target) is refused; the
    refusal names the kind and never the secret."""
    for slug in (_TOKEN, _KEY):
        result = holder.call("create_memory", {"name": slug, "description": "d", "body": "b"})
        assert (result.ok, result.kind) == (False, "invalid-argument")
        assert "the name of a memory holds a secret" in result.text
        assert slug not in result.text
    assert holder.call("create_memory", {"name": "ok", "description": "d", "body": "b"}).ok
    head = repo.head("profile/p")
    with pytest.raises(SecretFound) as caught:
        repo.mutate(
            "profile/p",
            ME,
            lambda s: Change(
                "rename",
                _TOKEN,
                Memory(_TOKEN, "d", "b"),
                also=(Edit("rename", "ok", None),),
            ),
        )
    assert _TOKEN not in str(caught.value)
    assert repo.head("profile/p") == head


def test_a_secret_in_a_file_path_or_the_commit_text_is_refused(repo: Repository) -> None:
    """A file store's path (the memory tool's file names, rename targets), an extra
    trailer's value and the author's name are scanned; none is repeated."""
    changes = [
        (ME, FileChange((FileEdit("create", f"notes/{_TOKEN}.md", ""),))),
        (ME, FileChange((FileEdit("create", f"{_KEY}/a.md", "x"),))),
        (ME, FileChange((FileEdit("create", "a.md", "x"),), {"Gitmem-Note": f"key {_KEY}"})),
        (Author(f"bot {_TOKEN}", "b@example.com"), FileChange((FileEdit("create", "a.md", "x"),))),
    ]
    for author, change in changes:
        with pytest.raises(SecretFound) as caught:
            repo.publish_files("files", author, lambda _, c=change: c)
        assert _TOKEN not in str(caught.value) and _KEY not in str(caught.value)
    assert repo.stores() == []


def test_the_memory_tool_refuses_a_secret_file_name(repo: Repository) -> None:
    """A memory-tool create or rename onto a credential-named path is a ToolError."""
    from anthropic.lib.tools import ToolError

    from gitmem.anthropic import GitMemoryTool

    tool = GitMemoryTool(repo, "claude/memories", author="claude")
    for command in (
        {"command": "create", "path": f"/memories/{_TOKEN}.md", "file_text": "x"},
        {"command": "create", "path": "/memories/a.md", "file_text": "x"},
        {"command": "rename", "old_path": "/memories/a.md", "new_path": f"/memories/{_KEY}"},
    ):
        if command["path" if "path" in command else "new_path"].endswith("/a.md"):
            tool.call(command)
            continue
        with pytest.raises(ToolError) as caught:
            tool.call(command)
        assert "secret" in str(caught.value)
    assert repo.files("claude/memories").files() == ["memories/a.md"]


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    fields=st.lists(
        st.lists(
            st.characters() | st.sampled_from(["İ", "Σ", "K", "ß", "\n", " ", "= "]),
            max_size=40,
        ).map("".join)
        | st.sampled_from([line for _, line, _ in _PLANTED] + ["TOKEN", "Passwd", "ghx", "sk"]),
        max_size=5,
    )
)
def test_a_write_is_refused_exactly_when_one_of_its_parts_holds_a_secret(
    fields: list[str],
) -> None:
    """Skipping a write with no detector's anchor or keyword anywhere in it refuses
    nothing a scan of each part would refuse, and admits nothing it would not."""
    named = [(f"part {i}", text) for i, text in enumerate(fields)]
    expected = any(list(scan(text)) for text in fields)
    try:
        check_texts(named)
    except SecretFound:
        assert expected
    else:
        assert not expected
