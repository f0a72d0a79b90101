"""Progress of the data tools over their input files: a bar on stderr over the bytes of the input
(known before the first is read), so that a long read shows its total and how long is left, with
a count of what was made of it (documents, instances) and its rate.

How far a file has been read is asked of the operating system (`ReadPosition`), so the readers in
albert.data.corpus need no hooks: for a compressed file it is the compressed bytes read, which is
what the total counts.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence

from tqdm import tqdm


class ReadPosition:
    """How far this process has read into `path`: the offset of its open file on it (Linux's
    /proc/self/fdinfo), or None when no file on it is open here or the system does not say (the
    bar then moves when the file is done)."""

    _RESCAN_SECONDS = 1.0  # a search of every open file at most this often

    def __init__(self, path: str):
        self.target = os.path.realpath(path)
        self.fd: int | None = None
        self.searched = float("-inf")

    def __call__(self) -> int | None:
        if self.fd is not None:
            position = self._position(self.fd)
            if position is not None:
                return position
            self.fd = None
        now = time.monotonic()
        if now - self.searched < self._RESCAN_SECONDS:
            return None
        self.searched = now
        try:
            names = os.listdir("/proc/self/fd")
        except OSError:
            return None
        for name in names:
            position = self._position(int(name))
            if position is not None:
                self.fd = int(name)
                return position
        return None

    def _position(self, fd: int) -> int | None:
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != self.target:
                return None
            with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as f:
                for line in f:
                    if line.startswith("pos:"):
                        return int(line.split()[1])
        except (OSError, ValueError):
            return None
        return None


class InputProgress:
    """A bar over the bytes of `files`: `read(i, position)` as file i is read, `done(i)` when it
    is; `counted(n)` shows the n `what` made so far, with their rate. Off when not `enabled`
    (nothing is asked of the system then)."""

    def __init__(self, files: Sequence[str], what: str, enabled: bool = True,
                 desc: str = "reading"):
        self.enabled = enabled
        self.sizes = [os.path.getsize(f) for f in files] if enabled else [0] * len(files)
        self.reached = [0] * len(files)
        self.what = what
        self.start = self.shown = time.monotonic()
        self.bar = tqdm(total=sum(self.sizes), unit="B", unit_scale=True, unit_divisor=1024,
                        desc=desc, file=sys.stderr, mininterval=1.0, disable=not enabled)

    def position(self, path: str) -> Callable[[], int | None]:
        """The reader of how far this process has read into `path` (nothing when off)."""
        return ReadPosition(path) if self.enabled else lambda: None

    def read(self, index: int, position: int | None) -> None:
        if not self.enabled or position is None:
            return
        position = min(position, self.sizes[index])
        if position > self.reached[index]:
            self.bar.update(position - self.reached[index])
            self.reached[index] = position

    def done(self, index: int) -> None:
        self.read(index, self.sizes[index] if self.enabled else None)

    def counted(self, count: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        rate = count / max(now - self.start, 1e-9)
        self.bar.set_postfix_str(f"{count} {self.what} ({rate:.0f}/s)", refresh=False)
        if now - self.shown >= 1.0:  # shown also while the bytes do not move (one large file)
            self.shown = now
            self.bar.refresh()

    def close(self) -> None:
        self.bar.close()
