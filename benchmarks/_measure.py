"""Measuring a process: the library's Chroma calls, its memory, and child processes that
report in JSON (``live.py``, ``per_request.py`` and ``calls.py`` share these)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar


class ChromaCalls:
    """The library's Chroma calls (``StoreClient.call``, outermost only): how many, by what
    they do (``counts``), and the seconds spent inside them (``seconds``).

    ``install()`` wraps ``StoreClient.call`` once per process; each exchange of ours then
    splits into time in Chroma and time in the library itself (ranking, indexes, planning).
    """

    counts: ClassVar[Counter[str]] = Counter()
    seconds: ClassVar[float] = 0.0
    _depth = threading.local()

    @classmethod
    def install(cls) -> None:
        from langchain_recursive_memory.core.storage import client

        original = client.StoreClient.call
        if getattr(original, "counted", False):
            return

        def call(self: Any, what: str, fn: Any) -> Any:
            depth = getattr(cls._depth, "n", 0)
            cls._depth.n = depth + 1
            t0 = time.perf_counter()
            try:
                return original(self, what, fn)
            finally:
                cls._depth.n = depth
                if depth == 0:
                    cls.seconds += time.perf_counter() - t0
                    cls.counts[what] += 1

        call.counted = True  # type: ignore[attr-defined]
        client.StoreClient.call = call  # type: ignore[method-assign]

    @classmethod
    def total(cls) -> int:
        return sum(cls.counts.values())

    @classmethod
    def snapshot(cls) -> Counter[str]:
        return Counter(cls.counts)


def rss_bytes() -> int:
    """Resident set size of this process in bytes (``/proc/self/statm``; else the peak)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1000


def malloc_trim() -> bool:
    """Ask glibc to give freed heap pages back to the system (False when not glibc)."""
    try:
        import ctypes

        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


def child_json(
    command: Sequence[str],
    what: str,
    *,
    timeout: float | None = None,
    stderr: bool = True,
) -> dict[str, Any]:
    """Run ``command`` (a child that prints its result as the last line of its output, in
    JSON); that result. ``stderr=False`` leaves the child's stderr on the terminal (its
    progress); a failure raises ``RuntimeError`` naming ``what``."""
    done = subprocess.run(
        list(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if stderr else None,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stderr or "")[-3000:]
        raise RuntimeError(f"{what} failed (exit {done.returncode}):\n{tail}")
    got: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return got
