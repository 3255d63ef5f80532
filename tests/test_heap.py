"""Handing freed memory back to the system (gitmem.adapters.heap)."""

from __future__ import annotations

import platform
import subprocess
import sys

from gitmem.adapters import heap

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def test_the_calls_are_made_where_the_c_library_has_them() -> None:
    """On glibc both thresholds are taken and the heaps trimmed; elsewhere nothing is
    called and each says so."""
    assert heap.give_back() is GLIBC
    assert heap.keep_small() is GLIBC
    assert heap.give_back() is GLIBC


def test_a_large_block_freed_leaves_the_process_small() -> None:
    """With the thresholds kept, a process that built and freed a block of 16 MiB is
    back near its size before it (glibc's defaults keep megabytes of it)."""
    script = (
        "import sys\n"
        "from gitmem.adapters import heap\n"
        "def rss():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmRSS:'): return int(line.split()[1])\n"
        "heap.keep_small()\n"
        "before = rss()\n"
        "big = bytes(16 << 20); del big\n"
        "parts = [bytes(600 << 10) for _ in range(100)]; del parts\n"
        "print(rss() - before)\n"
    )
    if not GLIBC:
        assert heap.keep_small() is False
        return
    grown = int(
        subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        ).stdout
    )
    assert grown < 2 << 10  # KiB: neither the block nor the 60 MiB of parts stay
