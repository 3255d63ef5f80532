"""Per-session extraction: which past sessions a retain run reads, and what each taught.

A session is chosen when its transcript changed since it was last extracted (its
fingerprint, the transcript's size and modification time, differs from the one its
extraction records), and it is neither active (named by the caller, or changed less
than ``min-idle-hours`` ago) nor too old (last changed more than ``max-age-days`` ago).
The newest are taken first, at most ``max-sessions-per-run`` of them; the rest wait for
the next run.

Each extraction is the model's answer to the ``extract`` prompt, kept as
``extractions/<session>.md`` in the recall store, one commit per session authored by
``extractor`` with trailers naming the session, the model, the prompt and the
transcript's fingerprint. The screens every write passes run first, so an answer
holding a secret is refused and nothing of it is written.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from gitmem.observe.logbook import Trail, author
from gitmem.observe.model import Model
from gitmem.observe.prompts import prompt
from gitmem.observe.recall import EXTRACTIONS, RecallSettings
from gitmem.observe.transcripts import SessionFile, payload
from gitmem.repository import Repository
from gitmem.store import FileSnapshot
from gitmem.types import FileChange, FileEdit

__all__ = [
    "EXTRACTOR",
    "Extraction",
    "Selection",
    "extract",
    "processed",
    "select",
]

EXTRACTOR = author("extractor")
"""The author of extraction commits."""
_FINGERPRINT = "Gitmem-Source-Fingerprint"
SYNOPSIS_MAX = 200
MEMORY_MAX = 4_000
_DAY = 86_400.0
_HOUR = 3_600.0


@dataclass(frozen=True)
class Extraction:
    """What one session taught: a synopsis line and a raw memory block, with the
    fingerprint of the transcript it was read from."""

    session: str
    source: str
    synopsis: str
    memory: str

    def path(self) -> str:
        """Where it lives in the store."""
        return f"{EXTRACTIONS}/{self.session}.md"

    def render(self) -> str:
        """The file's text."""
        head = f"session: {self.session}\nsource: {self.source}\nsynopsis: {self.synopsis}\n"
        return f"---\n{head}---\n{self.memory.strip()}\n"

    @classmethod
    def parse(cls, text: str) -> Extraction | None:
        """An extraction file's contents (``None`` if it is not one)."""
        lines = text.split("\n")
        if len(lines) < 5 or lines[0] != "---" or lines[4] != "---":
            return None
        found: dict[str, str] = {}
        for line in lines[1:4]:
            key, _, value = line.partition(": ")
            found[key] = value
        if {"session", "source", "synopsis"} - found.keys():
            return None
        memory = "\n".join(lines[5:]).strip()
        return cls(found["session"], found["source"], found["synopsis"], memory)

    @classmethod
    def from_answer(cls, session: SessionFile, answer: str) -> Extraction:
        """The model's answer to the extract prompt, bounded: the ``Synopsis:`` line,
        and the ``Memory:`` block (the whole answer when it has neither)."""
        synopsis = ""
        memory: list[str] = []
        in_memory = False
        for line in answer.strip().splitlines():
            if not in_memory and line.lower().startswith("synopsis:"):
                synopsis = line.partition(":")[2].strip()
            elif not in_memory and line.strip().lower() == "memory:":
                in_memory = True
            elif in_memory or not synopsis:
                memory.append(line.rstrip())
        text = "\n".join(memory).strip()
        if not synopsis:
            synopsis = text.partition("\n")[0]
        one_line = " ".join(synopsis.split())[:SYNOPSIS_MAX]
        return cls(session.session, session.fingerprint, one_line, text[:MEMORY_MAX])


@dataclass
class Selection:
    """The sessions a run extracts, newest first, and why each other one waits."""

    chosen: list[SessionFile] = field(default_factory=lambda: list[SessionFile]())
    skipped: dict[str, str] = field(default_factory=lambda: dict[str, str]())


def processed(files: FileSnapshot) -> dict[str, Extraction]:
    """Every session extracted so far, by session id."""
    found: dict[str, Extraction] = {}
    for path in files.files(EXTRACTIONS):
        extraction = Extraction.parse(files.read(path) or "")
        if extraction is not None:
            found[extraction.session] = extraction
    return found


def select(
    candidates: Sequence[SessionFile],
    done: Mapping[str, Extraction],
    settings: RecallSettings,
    now: float,
    active: Collection[str] = (),
) -> Selection:
    """Which of ``candidates`` a run at ``now`` extracts (see the module's rules)."""
    chosen = Selection()
    for session in sorted(candidates, key=lambda s: (-s.modified, s.session)):
        age = now - session.modified
        if session.session in active:
            reason = "active"
        elif age < settings.min_idle_hours * _HOUR:
            reason = "too recent"
        elif age > settings.max_age_days * _DAY:
            reason = "too old"
        elif (known := done.get(session.session)) is not None and known.source == (
            session.fingerprint
        ):
            reason = "unchanged"
        elif len(chosen.chosen) >= settings.max_sessions:
            reason = "over the cap"
        else:
            chosen.chosen.append(session)
            continue
        chosen.skipped[session.session] = reason
    return chosen


def extract(repo: Repository, store: str, model: Model, session: SessionFile) -> Extraction:
    """Extract what ``session`` taught and keep it in ``store`` as one commit by
    ``extractor``; a refusal (a secret, say) writes nothing and propagates."""
    step = prompt("extract")
    extraction = Extraction.from_answer(session, model.complete(step.text, payload(session.path)))
    trailers = Trail(session.session, model.name, step.label).trailers()
    trailers[_FINGERPRINT] = session.fingerprint

    def change(files: FileSnapshot) -> FileChange:
        op = "edit" if extraction.path() in files else "create"
        return FileChange((FileEdit(op, extraction.path(), extraction.render()),), trailers)

    repo.publish_files(store, EXTRACTOR, change)
    return extraction
