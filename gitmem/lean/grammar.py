"""The grammar of the read commands the lean path answers, as the command line defines
it: generated from the click commands by ``tests/test_lean_grammar.py`` (which fails
when it is not what they generate). Do not edit by hand.

``GLOBAL`` and ``COMMANDS[name][0]`` map each option string to its parameter name and
whether it is a flag; ``COMMANDS[name][1]`` lists the arguments: name, how many values
(-1: any number) and whether one is required.
"""

from __future__ import annotations

GLOBAL: dict[str, tuple[str, bool]] = {
    "--help": ("_click_default_help", True),
    "--repo": ("repo", False),
    "--version": ("version", True),
    "-h": ("_click_default_help", True),
}

ENVVARS: dict[str, str] = {
    "repo": "GITMEM_REPO",
}

COMMANDS: dict[str, tuple[dict[str, tuple[str, bool]], list[tuple[str, int, bool]]]] = {
    "ls": (
        {
            "--at": ("at", False),
            "--help": ("_click_default_help", True),
            "--json": ("as_json", True),
            "--store": ("store", False),
            "-h": ("_click_default_help", True),
            "-s": ("store", False),
        },
        [],
    ),
    "show": (
        {
            "--at": ("at", False),
            "--help": ("_click_default_help", True),
            "--json": ("as_json", True),
            "--rev": ("rev", False),
            "--store": ("store", False),
            "-h": ("_click_default_help", True),
            "-s": ("store", False),
        },
        [("slug", 1, True)],
    ),
    "log": (
        {
            "--at": ("at", False),
            "--help": ("_click_default_help", True),
            "--json": ("as_json", True),
            "--patch": ("patch", True),
            "--stat": ("stat", True),
            "--store": ("store", False),
            "-h": ("_click_default_help", True),
            "-p": ("patch", True),
            "-s": ("store", False),
        },
        [("slug", 1, False)],
    ),
    "search": (
        {
            "--at": ("at", False),
            "--help": ("_click_default_help", True),
            "--json": ("as_json", True),
            "--limit": ("limit", False),
            "--store": ("store", False),
            "-h": ("_click_default_help", True),
            "-s": ("store", False),
        },
        [("keywords", -1, True)],
    ),
    "state": (
        {
            "--at": ("at", False),
            "--help": ("_click_default_help", True),
            "--json": ("as_json", True),
            "--store": ("store", False),
            "-h": ("_click_default_help", True),
            "-s": ("store", False),
        },
        [],
    ),
    "blame": (
        {
            "--at": ("at", False),
            "--help": ("_click_default_help", True),
            "--json": ("as_json", True),
            "--store": ("store", False),
            "-h": ("_click_default_help", True),
            "-s": ("store", False),
        },
        [("slug", 1, True)],
    ),
}
