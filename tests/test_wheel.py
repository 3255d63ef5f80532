"""The package as users get it: a wheel built by ``python -m build`` holds every file
gitmem reads, installs into a fresh venv and runs ``gitmem demo`` with no source tree."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTION = "gitmem_agent"  # the PyPI name, normalised as wheels spell it

# Top-level folders shipped inside the package: source folder → where it lands.
DATA_FOLDERS = {
    "sandbox": "gitmem/_runtime",
    "hooks": "gitmem/_hooks",
    "gitmem/adapters/console_static": "gitmem/adapters/console_static",
}


def _source_files() -> list[str]:
    """The files a fresh clone would hold (tracked, or new and not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(p for p in listed.split("\0") if p and (ROOT / p).is_file())


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return {**env, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def _run(args: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, env=_clean_env()
    )
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``python -m build`` (sdist, then the wheel from the sdist) on a copy of the tree.

    No build isolation: setuptools and build come from the test extra, so the test
    needs no network; the copy keeps build/ and *.egg-info out of the checkout.
    """
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    for name in _source_files():
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((ROOT / name).read_bytes())
    result = _run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", tmp / "dist", source],
        tmp,
    )
    assert "BuildBackendWarning" not in result.stderr + result.stdout, result.stderr
    assert "deprecated" not in (result.stderr + result.stdout).lower(), result.stderr
    (built,) = (tmp / "dist").glob("*.whl")
    yield built


def test_the_wheel_holds_every_module_and_data_file(wheel: Path) -> None:
    """Every module under gitmem/ and every file of sandbox/, hooks/ and the console ships."""
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    wanted: set[str] = set()
    for name in _source_files():
        if (name.startswith("gitmem/") and name.endswith(".py")) or name == "gitmem/py.typed":
            wanted.add(name)
        for folder, landing in DATA_FOLDERS.items():
            if name.startswith(folder + "/"):
                wanted.add(landing + name[len(folder) :])
    assert "gitmem/_runtime/runtime.ts" in wanted and "gitmem/cli/__init__.py" in wanted
    assert sorted(wanted - shipped) == []
    assert f"{DISTRIBUTION}-0.1.0.dist-info/licenses/LICENSE" in shipped
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"{DISTRIBUTION}-0.1.0.dist-info/METADATA").decode()
        entry_points = archive.read(f"{DISTRIBUTION}-0.1.0.dist-info/entry_points.txt").decode()
    assert "Name: gitmem-agent\n" in metadata
    assert "License-Expression: MIT\n" in metadata
    assert "gitmem = gitmem.__main__:main" in entry_points


def test_the_wheel_installs_and_runs_the_demo_without_the_source_tree(
    wheel: Path, tmp_path: Path
) -> None:
    """A fresh venv, the wheel alone installed in it, runs ``gitmem demo`` from elsewhere."""
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], tmp_path)
    python = venv / "bin" / "python"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "install",
            "--no-deps",
            "--no-index",
            wheel,
        ],
        tmp_path,
    )
    # The dependencies (dulwich, click, deno) come from this venv's site-packages, added
    # as a plain path: its .pth files (the editable finder pointing at the checkout) are
    # not run, so `gitmem` itself can only come from the wheel.
    purelib = Path(
        _run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp_path
        ).stdout.strip()
    )
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()] or [
        sysconfig.get_path("purelib")
    ]
    (purelib / "zz_test_dependencies.pth").write_text("\n".join(ours) + "\n")
    # The `deno` wheel puts its binary among the scripts, where pip would have put it.
    (venv / "bin" / "deno").symlink_to(Path(sysconfig.get_path("scripts"), "deno"))
    where = _run([python, "-c", "import gitmem, sys; print(gitmem.__file__)"], tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout
    work = tmp_path / "elsewhere"
    work.mkdir()
    demo = _run([venv / "bin" / "gitmem", "demo"], work)
    assert "responses-as-code" in demo.stdout, demo.stdout
    assert "Traceback" not in demo.stdout + demo.stderr
    runtime = _run(
        [python, "-c", "from gitmem.sandbox.launch import runtime_file; print(runtime_file())"],
        work,
    )
    assert Path(runtime.stdout.strip()).is_relative_to(venv), runtime.stdout
