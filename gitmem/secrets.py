"""Secret scanning: the credentials a write must not carry, found in one linear pass.

:func:`scan` finds credentials in a text; :func:`check_texts` refuses a write whose
fields hold one (:class:`~gitmem.errors.SecretFound`, naming the kind and the
``line:column`` where it starts, never the secret). A reviewed false positive is
admitted by an :class:`Allowlist`, a file kept in the store itself (see docs/guards.md,
"Secret scanning").

Every detector starts at a literal anchor (``AKIA``, ``ghp_``, ``-----BEGIN`` ...): one
pass of a literal alternation finds the candidates, and each is confirmed by a pattern
anchored where it was found, with bounded repetitions only, so the cost is linear in
the text (everything an agent writes is hostile input). The formats are the providers'
documented ones; the generic ``password=``/``secret=``/``token=`` rule also asks the
value to look random (length, character classes and entropy), so prose and code that
merely mention a password pass.
"""

from __future__ import annotations

import functools

from gitmem.errors import InvalidArgument, SecretFound

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from re import Pattern
    from typing import NamedTuple

    from gitmem.types import MemoryParts
else:
    from gitmem.lean.tuples import NamedTuple  # a push hook's process never loads typing

__all__ = [
    "ALLOWLIST_MAX",
    "Allowlist",
    "Finding",
    "check_texts",
    "fingerprint",
    "holds_none",
    "scan",
]

ALLOWLIST_MAX = 65_536
"""Characters an allowlist file may hold."""


class Finding(NamedTuple):
    """One credential in a text: its kind, where it starts (1-based line and column, in
    characters) and its fingerprint (what an allowlist names; never the secret)."""

    kind: str
    line: int
    column: int
    fingerprint: str


def fingerprint(secret: str) -> str:
    """The allowlist name of ``secret``: 16 hex digits of its SHA-256."""
    import hashlib  # a finding is rare: a write that holds none never loads it

    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()[:16]


# (anchors, kind, confirming pattern matched at an anchor; group 1 is the secret when
# present, else the whole match). Anchors are literals: ``str.find`` is the fast pass.
_B32 = "A-Z2-7"
_DETECTORS: list[tuple[tuple[str, ...], str, str]] = [
    (
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        "AWS access key id",
        rf"A(?:KIA|SIA|BIA|CCA)[{_B32}]{{16}}(?![A-Za-z0-9])",
    ),
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        "GitHub token",
        r"gh[pousr]_[A-Za-z0-9]{36,251}(?![A-Za-z0-9])",
    ),
    (("github_pat_",), "GitHub fine-grained token", r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}"),
    (
        tuple(f"gl{p}-" for p in ("pat", "dt", "rt", "cbt", "ptt", "ft", "imt", "soat", "oas")),
        "GitLab token",
        r"gl(?:pat|dt|rt|cbt|ptt|ft|imt|soat|oas)-[A-Za-z0-9_.-]{20,200}",
    ),
    (tuple(f"xox{c}-" for c in "abposre"), "Slack token", r"xox[abposre]-[0-9A-Za-z-]{10,250}"),
    (("xapp-",), "Slack token", r"xapp-[0-9]-[A-Z0-9]{6,20}-[0-9]{6,20}-[a-z0-9]{32,80}"),
    (
        ("hooks.slack.com/",),
        "Slack webhook URL",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,200}",
    ),
    (("sk_live_", "rk_live_"), "Stripe live key", r"[sr]k_live_[0-9A-Za-z]{24,247}"),
    (("AIza",), "Google API key", r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
    (("sk-ant-",), "Anthropic API key", r"sk-ant-[a-z]{2,10}[0-9]{0,3}-[A-Za-z0-9_-]{32,200}"),
    (
        ("sk-",),
        "OpenAI API key",
        r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,250}"
        r"|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{48}(?![A-Za-z0-9]))",
    ),
    (("npm_",), "npm token", r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    (("pypi-AgE",), "PyPI token", r"pypi-AgE[A-Za-z0-9_-]{50,400}"),
    (
        ("eyJ",),
        "JSON Web Token",
        r"eyJ[A-Za-z0-9_-]{8,2000}\.eyJ[A-Za-z0-9_-]{8,4000}\.[A-Za-z0-9_-]{0,2000}",
    ),
    (
        ("-----BEGIN ",),
        "private key",
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----",
    ),
    (("://",), "password in a URL", r"://[^\s:/@?#]{1,128}:([^\s/@?#]{1,128})@[A-Za-z0-9.\[\]-]"),
]
_URL = "password in a URL"
_GENERIC_WORDS = (
    "passwd",
    "password",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "api_key",
    "api-key",
    "apikey",
    "access_key",
    "access-key",
    "auth_key",
    "credential",
)
_GENERIC_KIND = "password/secret/token assignment"
# Patterns are kept as text and compiled at their first use (`_re`): a process that
# never writes (`gitmem ls`, `show`, `log`) pays nothing for them.
_GENERIC = r"[A-Za-z0-9_]{0,24}[\"']?\s{0,3}(?::=|=|:)\s{0,3}[\"'`]?([^\s\"'`,;]{1,200})"
_AWS_SECRET = r"(?i:aws)[A-Za-z0-9_.-]{0,30}?(?i:secret)"
_AWS_SECRET_VALUE = r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
_WORDS = r"[-_./:]"
_PLACEHOLDERS = frozenset(
    ("password", "passwd", "pass", "secret", "token", "changeme", "example", "user", "pwd")
)


@functools.cache
def _re(pattern: str) -> Pattern[str]:
    """``pattern`` compiled, once per process, at its first use (``re`` itself loaded
    then: a push hook's process that meets no candidate never loads it)."""
    import re

    return re.compile(pattern)


@functools.lru_cache(maxsize=256)
def _looks_random(value: str) -> bool:
    """Whether an assigned value is credential-like: long, mixed and high-entropy, not
    a name, a call, a placeholder or a reference to something else (kept for the
    values last judged: a text that repeats itself meets the same values again)."""
    if len(value) < 12 or value[0] in "$<{%([" or "..." in value:
        return False
    if any(c in value for c in "(){}<>") or value.lower().strip("*x") in _PLACEHOLDERS:
        return False
    if all(p.isalpha() or (p.isdigit() and len(p) <= 8) for p in _re(_WORDS).split(value) if p):
        return False  # words and small numbers joined up: a name, not a key
    # each distinct character looked at once: a text where every few characters start
    # a candidate whose value runs on for 200 costs a few steps a character, not hundreds
    chars = set(value)
    digits = any(c.isdigit() for c in chars)
    classes = (
        any(c.islower() for c in chars)
        + any(c.isupper() for c in chars)
        + digits
        + any(not c.isalnum() for c in chars)
    )
    if classes < 2 or not digits:
        return False
    import math  # a candidate's: a write that holds none never loads it
    from collections import Counter

    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy >= 3.3


def _placeholder_password(value: str) -> bool:
    low = value.lower()
    return (
        low.strip("*x") in _PLACEHOLDERS
        or low.strip("*x.") == ""
        or value[0] in "$<{%["
        or low in ("password123", "hunter2")
    )


def _probes(anchors: list[tuple[str, int]]) -> dict[str, list[tuple[str, int]]]:
    """Anchors grouped under the shortest shared start (``gh`` for ``ghp_`` and
    ``github_pat_``), so one ``str.find`` serves a group: fewer passes over the text."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for anchor, tag in anchors:
        probe = next((p for p in _PROBES if anchor.startswith(p)), anchor)
        groups.setdefault(probe, []).append((anchor, tag))
    return groups


_ANCHORED: dict[str, list[tuple[int, str]]] = {}
"""Each detector's anchors by their first character, in the detectors' order: a value
is tried against those it can start with, not against every detector."""
for _number, (_anchors, _, _) in enumerate(_DETECTORS):
    for _anchor in _anchors:
        _ANCHORED.setdefault(_anchor[0], []).append((_number, _anchor))

_PROBES = ("A", "gh", "gl", "xox", "sk", "pass", "api", "access")
_BY_PROBE = _probes([(a, n) for n, (anchors, _, _) in enumerate(_DETECTORS) for a in anchors])
_GENERIC_BY_PROBE = _probes([(w, -len(w)) for w in _GENERIC_WORDS])


def _folded(text: str) -> str:
    """``text`` in lower case character for character: the same length, so an offset
    found in it is the same offset in ``text`` (``'İ'.lower()`` is two characters; a
    character whose lower case is longer is kept as it is)."""
    low = text.lower()
    if len(low) == len(text):
        return low  # no character grew (none ever shrinks): every offset holds
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _find(text: str, groups: dict[str, list[tuple[str, int]]], into: list[tuple[int, int]]) -> None:
    for probe, members in groups.items():
        at = text.find(probe)
        while at >= 0:
            for anchor, tag in members:
                if text.startswith(anchor, at):
                    into.append((at, tag))
            at = text.find(probe, at + 1)


# characters most texts lack, the rarest first: a probe that holds one is looked for
# only in a text that holds it, which costs one pass of memchr when it does not
_RARE = "JB_x/kw"


def _guarded(probes: Iterable[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``probes`` grouped under the rarest character of :data:`_RARE` each holds (``""``,
    which every text holds, for none). A probe that holds another is left out: a text
    that holds it holds the other too."""
    groups: dict[str, list[str]] = {}
    kept = list(probes)
    for probe in kept:
        if not any(other != probe and other in probe for other in kept):
            guard = next((c for c in _RARE if c in probe), "")
            groups.setdefault(guard, []).append(probe)
    return tuple((guard, tuple(members)) for guard, members in groups.items())


_ANCHORS = _guarded(_BY_PROBE)
_KEYWORDS = _guarded(_GENERIC_BY_PROBE)


def _bare(text: str) -> bool:
    """Whether ``text`` holds none of the strings :func:`scan` starts a candidate at,
    so scanning it, or any part of it, finds nothing. (The keywords are ASCII, and
    lower-casing a character into ASCII does not depend on its neighbours.)"""
    # `in` in loops, not map(text.__contains__): no bound method made and called
    for guard, probes in _ANCHORS:
        if guard in text:
            for probe in probes:
                if probe in text:
                    return False
    low = _folded(text)
    for guard, probes in _KEYWORDS:
        if guard in low:
            for probe in probes:
                if probe in low:
                    return False
    return True


def holds_none(texts: Iterable[str]) -> bool:
    """Whether no text of ``texts`` holds a string :func:`scan` starts a candidate at,
    so none holds a credential: what :func:`check_texts` asks first, asked before the
    parts of a write are named for a refusal."""
    return _bare("\0".join(texts))


def scan(text: str) -> Iterator[Finding]:
    """Every credential in ``text``, in order of where it starts."""
    candidates: list[tuple[int, int]] = []
    _find(text, _BY_PROBE, candidates)
    _find(_folded(text), _GENERIC_BY_PROBE, candidates)
    candidates.sort()
    done = 0
    # the lines before ``counted`` and where the last of them ended, each stretch of
    # the text counted once however many credentials it holds
    line, counted, newline = 1, 0, -1
    for at, number in candidates:
        if at < done:
            continue
        found = _generic(text, at, -number) if number < 0 else _confirm(text, at, number)
        if found is not None:
            kind, where, secret = found
            line += text.count("\n", counted, where)
            newline = max(newline, text.rfind("\n", counted, where))
            counted = where
            column = where - newline
            yield Finding(kind, line, column, fingerprint(secret))
            done = where + len(secret)


def _confirm(text: str, at: int, number: int) -> tuple[str, int, str] | None:
    _, kind, pattern = _DETECTORS[number]
    if kind == "OpenAI API key" and text.startswith("sk-ant-", at):
        return None  # the Anthropic detector owns it
    match = _re(pattern).match(text, at)
    if match is None:
        return None
    if match.re.groups:
        secret = match.group(1)
        if kind == _URL and _placeholder_password(secret):
            return None
        return kind, match.start(1), secret
    return kind, at, match.group(0)


def _generic(text: str, at: int, size: int) -> tuple[str, int, str] | None:
    end = at + size
    # an assignment puts = or : within a few characters of its key; prose does not
    if text.find("=", end, end + 30) < 0 and text.find(":", end, end + 30) < 0:
        return None
    word = text[at:end].lower()
    if word in ("secret", "access_key", "access-key"):
        # aws_secret_access_key = <40 characters>: the one AWS secret with no prefix
        # the line's start, looked for no further back than the search begins
        line_start = text.rfind("\n", max(0, at - 34), at) + 1
        if _re(_AWS_SECRET).search(text, max(line_start, at - 34), end + 16):
            rest = _re(_GENERIC).match(text, end)
            if rest is not None and _re(_AWS_SECRET_VALUE).fullmatch(rest.group(1)):
                return "AWS secret access key", rest.start(1), rest.group(1)
    # a keyword inside a longer lower-case word (tokenizer, secretary) names no secret
    if at and text[at - 1].isalpha() and text[at - 1].islower() and text[at].islower():
        return None
    rest = _re(_GENERIC).match(text, end)
    if rest is None:
        return None
    value = rest.start(1)
    for number, anchor in _ANCHORED.get(text[value], ()):
        # a known credential assigned to a key is named as itself
        if text.startswith(anchor, value):
            found = _confirm(text, value, number)
            if found is not None:
                return found
    if not _looks_random(rest.group(1)):
        return None
    return _GENERIC_KIND, value, rest.group(1)


class Allowlist(NamedTuple):
    """The fingerprints a store admits: reviewed false positives.

    The file (``@allowlist`` at the root of the store's tree) holds one fingerprint per
    line, optionally followed by a comment after ``#``; blank lines and lines starting
    with ``#`` are ignored::

        # reviewed 2026-11-30 by ana: the sample key in the SDK docs
        3f5a0c9e1b2d4e6f  # example JWT in auth-notes
    """

    fingerprints: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str) -> Allowlist:
        """The allowlist a file holds; ``InvalidArgument`` naming the line that is not
        a fingerprint."""
        if len(text) > ALLOWLIST_MAX:
            raise InvalidArgument(
                f"the allowlist is {len(text):,} characters; keep it under {ALLOWLIST_MAX:,}"
            )
        found: set[str] = set()
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if not _re(_FINGERPRINT).fullmatch(line):
                raise InvalidArgument(
                    f"allowlist line {number} is not a fingerprint: write the 16 hex digits "
                    "a refusal names, optionally followed by '# why'"
                )
            found.add(line)
        return cls(frozenset(found))

    def admits(self, finding: Finding) -> bool:
        """Whether ``finding`` was reviewed and allowed."""
        return finding.fingerprint in self.fingerprints


_FINGERPRINT = r"[0-9a-f]{16}"
_NONE_ADMITTED = Allowlist()


@functools.lru_cache(maxsize=8)
def read_allowlist(text: str | None) -> Allowlist:
    """The secrets a store's ``@allowlist`` text admits: none if it is missing or broken
    (a broken list admits nothing, so it never widens what passes). An allowlist is
    frozen: the same text read again (a push's every commit) is the same one."""
    if not text:
        return Allowlist()
    try:
        return Allowlist.parse(text)
    except InvalidArgument:
        return Allowlist()


def memory_fields(memory: MemoryParts) -> list[tuple[str, str]]:
    """The parts of a memory a secret may hide in, each named for a refusal: its name
    first (named without itself, since a refusal never repeats a secret; the later
    parts are named by it only once it is clean), then the description, the body and
    both code halves (the store's write path and the push hooks scan the same ones)."""
    slug = memory.slug
    return [
        ("name of a memory", slug),
        (f"description of `{slug}`", memory.description),
        (f"body of `{slug}`", memory.body),
        (f"code of `{slug}`", memory.code),
        (f"onUse script of `{slug}`", memory.on_use),
    ]


def check_texts(
    fields: Iterable[tuple[str, str]], allow: Allowlist | None = _NONE_ADMITTED
) -> None:
    """Refuse (``SecretFound``) the first credential in ``fields`` (``(what, text)``
    pairs such as ``("body of `notes`", body)``) that ``allow`` does not admit
    (``None``: a store that keeps no allowlist)."""
    held = [(what, text) for what, text in fields if text]
    # no anchor or keyword anywhere in the write: no field holds a candidate
    if _bare("\0".join([text for _, text in held])):
        return
    for what, text in held:
        for finding in scan(text):
            if allow is not None and allow.admits(finding):
                continue
            hint = (
                "If it is not a credential, an operator can allow it after review: "
                f"gitmem guard allow {finding.fingerprint}"
                if allow is not None
                else "(a file store keeps no allowlist)"
            )
            raise SecretFound(
                f"refused: the {what} holds a secret ({finding.kind}) starting at "
                f"{finding.line}:{finding.column}; nothing was written. Remove the "
                "credential (keep it in a secret manager and note only where it lives), "
                f"then write again. {hint}",
                kind=finding.kind,
                line=finding.line,
                column=finding.column,
                fingerprint=finding.fingerprint,
            )
