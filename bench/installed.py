"""gitmem as a user's install from the wheel has it, and the interpreter that is the floor.

A process figure is read against ``python -c pass``. The development venv installs
gitmem in editable mode, whose import finder a ``.pth`` file loads at every start of
that venv's interpreter (tens of milliseconds): against it, every process looks cheaper
than a user's would. So the benchmarks build the wheel once, install it into a plain
venv made for the run, and reach the dependencies (dulwich, click, ...) through a
static ``.pth`` path to this venv's site-packages, whose own ``.pth`` files (the
editable finder) are not run. The floor is that venv's ``python -c pass``, and gitmem
is that venv's ``gitmem`` launcher, as pip writes it.
"""

from __future__ import annotations

import glob
import os
import site
import subprocess
import sys
import sysconfig
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Installed(NamedTuple):
    """A user's install: its interpreter (the floor) and its ``gitmem`` launcher."""

    python: str
    gitmem: str

    def describe(self) -> str:
        """Which interpreter the floor is, for a benchmark's first lines."""
        return (
            f"the floor: {self.python} -c pass (a plain venv with the gitmem wheel installed; "
            "no editable-install finder)"
        )


def _quiet(args: list[str], cwd: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def install(work: str) -> Installed:
    """Build the wheel of this checkout and install it in a new venv under ``work``."""
    os.makedirs(work, exist_ok=True)
    wheels = os.path.join(work, "wheel")
    _quiet(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            wheels,
            ROOT,
        ],
        cwd=work,
    )
    (wheel,) = glob.glob(os.path.join(wheels, "*.whl"))
    venv = os.path.join(work, "venv")
    _quiet([sys.executable, "-m", "venv", "--without-pip", venv])
    python = os.path.join(venv, "bin", "python")
    pip = [sys.executable, "-m", "pip", "--python", python]
    _quiet([*pip, "install", "--quiet", "--no-deps", "--no-index", wheel])
    purelib = _quiet([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    ours = [p for p in site.getsitepackages() if os.path.isdir(p)] or [
        sysconfig.get_path("purelib")
    ]
    with open(os.path.join(purelib.strip(), "zz_dependencies.pth"), "w") as f:
        f.write("\n".join(ours) + "\n")
    where = _quiet([python, "-c", "import gitmem; print(gitmem.__file__)"], cwd=work).strip()
    if not where.startswith(venv):
        raise RuntimeError(f"gitmem came from {where}, not the wheel")
    return Installed(python, os.path.join(venv, "bin", "gitmem"))
