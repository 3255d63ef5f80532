"""The model step: a prompt and a payload in, text out.

The observer, the summarizer and the librarian each make one call per finished run
through a :class:`Model`. gitmem needs no key of its own: a :class:`CommandModel` pipes
the call to a command line the user already has (for example a headless coding client
run with a small model), an :class:`AnthropicModel` uses the ``anthropic`` SDK (the
``anthropic`` extra), and a :class:`ScriptedModel` answers from a script, for tests and
the demo.

A model run that the pipeline starts may be the same client whose hooks feed the
observer; its child process gets ``GITMEM_OBSERVER_RUN=1`` (:data:`RUN_MARK`), and the
capture hooks and the panel do nothing under it, so the observer never observes itself.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from gitmem.errors import InvalidArgument, Unavailable

__all__ = [
    "RUN_MARK",
    "AnthropicModel",
    "CommandModel",
    "Model",
    "ModelFailed",
    "ScriptedModel",
    "model_from_config",
    "observer_run",
]

RUN_MARK = "GITMEM_OBSERVER_RUN"
"""Set to ``1`` in the environment of every model run the pipeline starts."""

OUTPUT_MAX = 256 * 1024
"""A model's answer is read up to this many bytes; more is a failure, not a hang."""


def observer_run() -> bool:
    """Whether this process is a model run the pipeline started (see :data:`RUN_MARK`)."""
    return os.environ.get(RUN_MARK) == "1"


class ModelFailed(Unavailable):
    """The model step could not answer (a command that failed, timed out or said too much)."""

    kind = "unavailable"


class Model(Protocol):
    """One model: ``complete(prompt, payload)`` returns its answer as text."""

    name: str
    """What the commit trailers name as the model of a step."""

    def complete(self, prompt: str, payload: str) -> str:
        """The model's answer to ``prompt`` (its instructions) about ``payload``."""
        ...


@dataclass
class ScriptedModel:
    """Answers from a list (in order, the last one repeated) or from a callable of
    ``(prompt, payload)``; every call is kept in ``calls``."""

    answers: Sequence[str] | Callable[[str, str], str]
    name: str = "scripted"
    calls: list[tuple[str, str]] = field(default_factory=lambda: list[tuple[str, str]]())

    def complete(self, prompt: str, payload: str) -> str:
        self.calls.append((prompt, payload))
        if callable(self.answers):
            return self.answers(prompt, payload)
        if not self.answers:
            return ""
        return self.answers[min(len(self.calls), len(self.answers)) - 1]


@dataclass
class CommandModel:
    """Runs ``argv`` once per call: the prompt, a blank line and the payload on its
    stdin, the answer from its stdout. A run longer than ``timeout`` seconds, an answer
    over ``OUTPUT_MAX`` bytes or a non-zero exit raises :class:`ModelFailed`; the
    child is killed, with every process it started (its own session), never waited on
    for ever."""

    argv: Sequence[str]
    timeout: float = 120.0
    name: str = ""

    def __post_init__(self) -> None:
        if not self.argv or not all(self.argv):
            raise InvalidArgument("a command model needs a command line")
        if not self.name:
            self.name = "command:" + os.path.basename(self.argv[0])

    def complete(self, prompt: str, payload: str) -> str:
        env = {**os.environ, RUN_MARK: "1"}
        data = (prompt.rstrip("\n") + "\n\n" + payload).encode()
        try:
            child = subprocess.Popen(
                list(self.argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise ModelFailed(f"the model command {self.argv[0]!r} cannot run: {exc}") from None
        try:
            out, err = _exchange(child, data, time.monotonic() + self.timeout)
        except BaseException:
            # the whole run: a child it forked may hold the pipes and outlive it
            with contextlib.suppress(OSError):
                os.killpg(child.pid, signal.SIGKILL)
            raise
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()
        if child.returncode != 0:
            said = err.decode("utf-8", "replace").strip().splitlines()
            reason = said[-1][:200] if said else "no message"
            raise ModelFailed(
                f"the model command {self.argv[0]!r} exited {child.returncode}: {reason}"
            )
        return out.decode("utf-8", "replace")


def _exchange(child: subprocess.Popen[bytes], data: bytes, deadline: float) -> tuple[bytes, bytes]:
    """Write ``data`` to the child and read its stdout and stderr, bounded in size and
    time (``communicate`` has a timeout but no size bound)."""
    assert child.stdin and child.stdout and child.stderr
    outputs = {child.stdout.fileno(): bytearray(), child.stderr.fileno(): bytearray()}
    pending = memoryview(data)
    stdin = child.stdin.fileno()
    with selectors.DefaultSelector() as selector:
        for fd in outputs:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        os.set_blocking(stdin, False)
        selector.register(stdin, selectors.EVENT_WRITE)

        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise ModelFailed("the model command gave no answer in time")
            for key, _ in selector.select(left):
                fd = int(key.fd)
                if fd == stdin:
                    try:
                        sent = os.write(fd, pending[:65536])
                    except BrokenPipeError:
                        sent = len(pending)
                    pending = pending[sent:]
                    if not pending:
                        selector.unregister(fd)
                        child.stdin.close()

                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    selector.unregister(fd)
                    continue
                outputs[fd] += chunk
                if len(outputs[fd]) > OUTPUT_MAX:
                    raise ModelFailed(f"the model command said more than {OUTPUT_MAX} bytes")
    return bytes(outputs[child.stdout.fileno()]), bytes(outputs[child.stderr.fileno()])


@dataclass
class AnthropicModel:
    """A model behind the Anthropic API (the ``anthropic`` extra; the SDK reads its key
    from the environment as it always does)."""

    model: str = "claude-haiku-4-5"
    max_tokens: int = 2048
    name: str = ""
    client: Any = None

    def __post_init__(self) -> None:
        if not self.name:
            self.name = "anthropic:" + self.model

    def complete(self, prompt: str, payload: str) -> str:
        client = self.client
        if client is None:
            try:
                import anthropic
            except ImportError:
                raise ModelFailed(
                    "the anthropic model needs the SDK: pip install 'gitmem-agent[anthropic]'"
                ) from None
            client = self.client = anthropic.Anthropic()
        try:
            answer = client.messages.create(
                model=self.model,
                max_tokens=self.max_tokens,
                system=prompt,
                messages=[{"role": "user", "content": payload}],
            )
        except Exception as exc:
            raise ModelFailed(f"the anthropic model failed: {type(exc).__name__}") from None
        parts = [getattr(block, "text", "") for block in getattr(answer, "content", [])]
        return "".join(p for p in parts if isinstance(p, str))


def model_from_config(settings: Mapping[str, str]) -> Model | None:
    """The model the settings name (``None`` when none is configured).

    ``model``: ``command`` (``command`` holds the command line, split as a shell would
    but never run by one; ``timeout`` its seconds), ``anthropic`` (``anthropic-model``
    names the model) or ``none``.
    """
    kind = settings.get("model", "none").strip().lower()
    if kind in ("", "none"):
        return None
    if kind == "command":
        import shlex

        line = settings.get("command", "")
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise InvalidArgument(f"the model command {line!r} does not parse: {exc}") from None
        return CommandModel(argv, timeout=_seconds(settings.get("timeout", "120")))
    if kind == "anthropic":
        return AnthropicModel(settings.get("anthropic-model", "") or "claude-haiku-4-5")
    raise InvalidArgument(f"model {kind!r} is not known; use command, anthropic or none")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InvalidArgument(f"timeout {text!r} is not a number of seconds") from None
    if not 0 < value <= 3600:
        raise InvalidArgument("timeout must be more than 0 and at most 3600 seconds")
    return value
