"""How rows read as text: one row whole, the birth block, and ``get_relevant``'s answer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gitmem.lean.text import one_line
from gitmem.strategies.curated.rows import Row


def row_text(row: Row) -> str:
    """A row as ``read_row`` shows it: claim, owner, lifecycle and links, then content."""
    lines = [f"`{row.name}` — {row.description}", f"{row.whose} · {row.role} · {row.status}"]
    if row.superseded:
        lines.append(
            f"superseded by {_names(row.linked('superseded_by'))}: "
            "it has left every injection and is kept for its history"
        )
    for key in ("supersedes", "graduated_to", "graduated_from"):
        if row.linked(key):
            lines.append(f"{key.replace('_', ' ')} {_names(row.linked(key))}")
    return "\n".join(lines) + "\n\n" + row.content


def _names(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def birth_block(user: Iterable[Row], projects: Mapping[str, int], host: int) -> str:
    """What a session is born with: each project with its live-pending count, the
    host's, then the user's rows and preferences whole ("" when there is nothing)."""
    standing = sorted((r for r in user if r.live and r.role != "log"), key=lambda r: r.name)
    if not standing and not projects and not host:
        return ""
    out = ["## Projects"]
    if projects:
        for key in sorted(projects):
            out.append(f"- `{key}`: {_threads(projects[key])} (get_relevant reads them)")
    else:
        out.append("- none yet")
    out += ["", "## Environment", f"- host: {_threads(host)}"]
    for title, rows in (
        ("User", [r for r in standing if r.kind != "preference"]),
        ("Preferences", [r for r in standing if r.kind == "preference"]),
    ):
        out += ["", f"## {title}"]
        if not rows:
            out.append("- none")
        for r in rows:
            out.append(f"- `{r.name}` — {one_line(r.description)}")
            out.extend(f"  {line}" for line in r.content.splitlines())
    return "\n".join(out)


def _threads(n: int) -> str:
    return f"{n} live pending thread" + ("" if n == 1 else "s")


def relevant_text(project: str, pending: list[Row], knowledge: list[Row] | None) -> str:
    """``get_relevant``'s answer: the whole live-pending set, with bodies."""
    if not pending:
        head = f"Project {project} owes nothing: no live pending thread (this is the complete set)."
    else:
        head = f"Project {project}: {_threads(len(pending))}, every one, with its body:"
    parts = [head] + [row_text(r) for r in sorted(pending, key=lambda r: r.name)]
    if knowledge is not None:
        parts.append(f"Standing knowledge of project {project}: {len(knowledge)} live row(s).")
        parts += [row_text(r) for r in sorted(knowledge, key=lambda r: r.name)]
    return "\n\n".join(parts)
