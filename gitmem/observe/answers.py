"""Reading what a model step answered: ``<observation>``, ``<summary>`` and ``<file>``
blocks. A model's answer is untrusted text: it is read in one pass with ``str.find``
(no backtracking pattern), its size and its number of blocks are bounded, its control
characters dropped, and what it says about where an entry came from is checked against
what the harness recorded.
"""

from __future__ import annotations

from collections.abc import Iterator

from gitmem.observe.entries import FACTS_MAX, SUMMARY_FIELDS, TYPES, Entry, printable

__all__ = ["ANSWER_MAX", "CURATED", "blocks", "curated_files", "observations", "summary"]

ANSWER_MAX = 64 * 1024
BLOCKS_MAX = 20
CURATED = ("active_context.md", "decisions.md", "lessons.md", "notes.md")
_KEYS = ("type", "title", "subtitle", "files", "keywords", "facts", "narrative", "source")


def blocks(text: str, tag: str) -> Iterator[tuple[str, str]]:
    """Each ``<tag …>body</tag>`` of ``text``: its opening tag's attributes and body."""
    text = printable(text[:ANSWER_MAX].encode("utf-8", "replace").decode("utf-8"))
    opening, closing = f"<{tag}", f"</{tag}>"
    at = 0
    for _ in range(BLOCKS_MAX):
        start = text.find(opening, at)
        if start < 0:
            return
        head_end = text.find(">", start)
        end = text.find(closing, head_end)
        if head_end < 0 or end < 0:
            return
        yield text[start + len(opening) : head_end].strip(), text[head_end + 1 : end]
        at = end + len(closing)


def _fields(body: str, keys: tuple[str, ...]) -> tuple[dict[str, str], list[str]]:
    """``key: value`` lines (a value may go on over lines that name no key) and the
    ``- `` items under a ``facts:`` line."""
    values: dict[str, str] = {}
    facts: list[str] = []
    key = ""
    for raw in body.strip().splitlines():
        line = raw.strip()
        name, colon, rest = line.partition(":")
        name = name.strip().lower()
        if colon and name in keys:
            key = name
            values[key] = rest.strip()
            continue
        if key == "facts" and line.startswith("-"):
            facts.append(line[1:].strip())
        elif key and line:
            values[key] = (values[key] + " " + line).strip()
    return values, facts


def _list(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())[:20]


def observations(
    text: str, *, session: str, agent: str, time: str, sources: tuple[str, ...]
) -> list[Entry]:
    """The observations of an observer's answer. A ``source`` the run did not make is
    not believed: the entry names the run's only call, if it made one, else none."""
    found: list[Entry] = []
    for _, body in blocks(text, "observation"):
        values, facts = _fields(body, _KEYS)
        title = values.get("title", "").strip()
        if not title:
            continue
        kind = values.get("type", "").strip().lower()
        source = values.get("source", "").strip()
        if source not in sources:
            source = sources[0] if len(sources) == 1 else ""
        found.append(
            Entry(
                kind=kind if kind in TYPES else "discovery",
                title=title,
                session=session,
                agent=agent,
                narrative=values.get("narrative", ""),
                subtitle=values.get("subtitle", ""),
                files=_list(values.get("files", "")),
                keywords=_list(values.get("keywords", "")),
                facts=tuple(facts[:FACTS_MAX]),
                source=source,
                time=time,
            )
        )
    return found


def summary(text: str, *, session: str, agent: str, time: str) -> Entry | None:
    """The summary of a summarizer's answer (``None`` if it gave none)."""
    for _, body in blocks(text, "summary"):
        values, _ = _fields(body, SUMMARY_FIELDS)
        if not any(values.values()):
            return None
        return Entry(
            kind="summary",
            title=values.get("request", "") or "Session summary",
            session=session,
            agent=agent,
            fields={name: values.get(name, "") for name in SUMMARY_FIELDS},
            time=time,
        )
    return None


def curated_files(text: str) -> dict[str, str]:
    """The curated files of a librarian's answer, by name (only the four it keeps)."""
    found: dict[str, str] = {}
    for attributes, body in blocks(text, "file"):
        name = attributes.partition("=")[2].strip().strip("\"'")
        if name in CURATED and name not in found:
            found[name] = body.strip("\n")
    return found
