"""The README stays a newcomer's ten minutes, and the docs speak in the product's words.

The site itself is built by ``make docs`` (``mkdocs build --strict``), which ``make
test`` runs: a broken link, a page left out of the nav or a failing reference fails it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

README_MAX_LINES = 300
SECTION_MAX_LINES = 100

# Citations of the design documents gitmem was built from, or of its tracker: the
# product names its concepts in its own words instead.
CITATIONS = re.compile(
    r"\bseeds?\b"  # "seed 001", "the seed's table"
    r"|\bspec\b"  # "SPEC §8", "where the spec is silent"
    r"|§"
    r"|\bissues?\s+#?\d+"  # "issue 16"
    r"|(?<![\w&])#\d+\b",  # "#27"
    re.IGNORECASE,
)


def _pages() -> list[Path]:
    return [README, ROOT / "mkdocs.yml", *sorted(DOCS.rglob("*.md"))]


def _sections(text: str) -> dict[str, int]:
    """Each ``## `` section of a Markdown text and its length in lines."""
    sizes: dict[str, int] = {}
    current = "(top)"
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:]
        sizes[current] = sizes.get(current, 0) + 1
    return sizes


def test_readme_is_short() -> None:
    """The README is a short read, not the engineering notes."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_MAX_LINES


def test_readme_has_no_long_section() -> None:
    """No README section grows into a chapter: long material belongs in docs/."""
    sizes = _sections(README.read_text(encoding="utf-8"))
    assert {s: n for s, n in sizes.items() if n >= SECTION_MAX_LINES} == {}


def test_readme_teaches_install() -> None:
    """The README says how to install, test and activate the venv."""
    text = README.read_text(encoding="utf-8")
    for needed in ("make demo", "make test", ".venv/bin/activate", "pip install gitmem-agent"):
        assert needed in text


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_citations(page: Path) -> None:
    """No README or docs page cites design documents or issue numbers."""
    text = page.read_text(encoding="utf-8")
    found = [m.group(0) for m in CITATIONS.finditer(text)]
    assert found == []


def test_citation_pattern() -> None:
    """The pattern catches the forms it is for, and not ordinary words."""
    for cited in ("seed 001", "the seed's table", "SPEC §8", "issue 16", "see #27"):
        assert CITATIONS.search(cited), cited
    for plain in ("seeded", "specific", "tell #ops", "&#39;", "issues"):
        assert not CITATIONS.search(plain), plain


def test_readme_links_resolve() -> None:
    """Every relative link in the README names a file of the repository."""
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    missing = [t for t in targets if "://" not in t and not (ROOT / t).exists()]
    assert targets and missing == []


def test_nav_names_the_shared_pages() -> None:
    """The site's nav carries the CLI's JSON shapes and the sandbox's limits."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in ("cli-json.md", "sandbox-limits.md", "reference/cli.md", "reference/api.md"):
        assert page in config
        assert (DOCS / page).is_file()


def test_cli_reference_target_exists() -> None:
    """The CLI reference is generated from ``gitmem.cli:cli``, a click group."""
    import click

    from gitmem.cli import cli

    assert isinstance(cli, click.Group)
    assert "gitmem.cli" in (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")


def _product_files() -> list[Path]:
    """The files the product ships: its code, the plugin and hook scripts, the sandbox."""
    files = [*sorted((ROOT / "gitmem").rglob("*")), *sorted((ROOT / "hooks").rglob("*"))]
    files += sorted((ROOT / "sandbox").glob("*.ts"))
    return [f for f in files if f.is_file() and f.suffix not in (".pyc", ".png", ".ico")]


@pytest.mark.parametrize("path", _product_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_product_has_no_citations(path: Path) -> None:
    """No code, comment, docstring, plugin or sandbox text cites design documents or issues."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return
    found = [
        f"{n}: {line.strip()}"
        for n, line in enumerate(text.splitlines(), 1)
        if CITATIONS.search(line)
    ]
    assert found == []


def _help_texts() -> list[tuple[str, str]]:
    """Every help text of the command line: commands, groups and their options."""
    import click

    from gitmem.cli import cli

    texts: list[tuple[str, str]] = []

    def walk(command: click.Command, path: str) -> None:
        texts.extend((path, t) for t in (command.help, command.short_help, command.epilog) if t)
        for param in command.params:
            if isinstance(param, click.Option) and param.help:
                texts.append((f"{path} {param.opts[0]}", param.help))
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(sub, f"{path} {name}")

    walk(cli, "gitmem")
    return texts


def test_help_has_no_citations() -> None:
    """The command line's help names concepts in the product's words, never a document."""
    texts = _help_texts()
    assert len(texts) > 40
    assert [(where, t) for where, t in texts if CITATIONS.search(t)] == []
