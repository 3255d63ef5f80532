"""The lean read path's grammar is the command line's: ``gitmem/lean/grammar.py`` is
generated from the click definitions, and stays what they generate.

Run ``GITMEM_WRITE_GRAMMAR=1 .venv/bin/pytest tests/test_lean_grammar.py`` after
changing an option of ``ls``, ``show``, ``log``, ``search``, ``state`` or the group's.
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from gitmem import quick
from gitmem.cli import cli
from gitmem.lean import grammar

GRAMMAR = Path(__file__).resolve().parent.parent / "gitmem" / "lean" / "grammar.py"

HEADER = '''"""The grammar of the read commands the lean path answers, as the command line defines
it: generated from the click commands by ``tests/test_lean_grammar.py`` (which fails
when it is not what they generate). Do not edit by hand.

``GLOBAL`` and ``COMMANDS[name][0]`` map each option string to its parameter name and
whether it is a flag; ``COMMANDS[name][1]`` lists the arguments: name, how many values
(-1: any number) and whether one is required.
"""

from __future__ import annotations

'''


def _options(command: click.Command, ctx: click.Context) -> dict[str, tuple[str, bool]]:
    found: dict[str, tuple[str, bool]] = {}
    params = [*command.params]
    help_option = command.get_help_option(ctx)
    if help_option is not None:
        params.append(help_option)
    for param in params:
        if isinstance(param, click.Option):
            for name in [*param.opts, *param.secondary_opts]:
                found[name] = (param.name or "", param.is_flag)
    return dict(sorted(found.items()))


def _arguments(command: click.Command) -> list[tuple[str, int, bool]]:
    return [
        (p.name or "", p.nargs, p.required) for p in command.params if isinstance(p, click.Argument)
    ]


def _table(options: dict[str, tuple[str, bool]], indent: str) -> list[str]:
    inner = indent + "    "
    return ["{\n", *(f"{inner}{k!r}: ({d!r}, {f!r}),\n" for k, (d, f) in options.items())]


def grammar_source() -> str:
    """The module ``gitmem/lean/grammar.py`` as the click definitions make it."""
    ctx = click.Context(cli, info_name="gitmem", **cli.context_settings)
    envvars = {
        p.name or "": p.envvar
        for p in cli.params
        if isinstance(p, click.Option) and isinstance(p.envvar, str)
    }
    out = [HEADER, "GLOBAL: dict[str, tuple[str, bool]] = ", *_table(_options(cli, ctx), ""), "}\n"]
    out += ["\nENVVARS: dict[str, str] = {\n"]
    out += [f"    {k!r}: {v!r},\n" for k, v in envvars.items()]
    out += [
        "}\n\nCOMMANDS: dict[str, tuple[dict[str, tuple[str, bool]], list[tuple[str, int, bool]]]] = {\n"
    ]
    for name in quick.COMMANDS:
        command = cli.get_command(ctx, name)
        assert command is not None, name
        sub = click.Context(command, parent=ctx, info_name=name)
        out += [f"    {name!r}: (\n        ", *_table(_options(command, sub), "        ")]
        out += ["        },\n", f"        {_arguments(command)!r},\n", "    ),\n"]
    out.append("}\n")
    return "".join(out).replace("'", '"')


def test_the_lean_grammar_is_generated_from_the_command_line() -> None:
    """The table the lean parser reads is exactly what the click commands generate."""
    wanted = grammar_source()
    if os.environ.get("GITMEM_WRITE_GRAMMAR"):
        GRAMMAR.write_text(wanted)
    assert GRAMMAR.read_text() == wanted
    assert set(grammar.COMMANDS) == set(quick.COMMANDS)
