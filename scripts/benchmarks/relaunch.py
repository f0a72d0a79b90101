"""Running scripts/benchmark.py again in a fresh process: --restart_cost needs a process with
nothing cached per case, --horovod one per rank under horovodrun. The script is named by its path
(not `python -m`): scripts/ is not a package, and the re-run finds this package beside it as the
first run did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "benchmark.py")


def drop_flag(argv: list[str], flag: str) -> list[str]:
    """argv without `flag` and its value, given as "--flag value" or "--flag=value"."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == flag:
            skip = True
            continue
        if a.startswith(flag + "="):
            continue
        out.append(a)
    return out


def rerun(argv: list[str], launcher: tuple[str, ...] = ()) -> dict:
    """The JSON of `python scripts/benchmark.py argv` (its --output replaced by a temporary
    file), run under `launcher` (a horovodrun command line) when given."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        subprocess.run([*launcher, sys.executable, SCRIPT, *drop_flag(argv, "--output"),
                        "--output", out], check=True, capture_output=True, text=True)
        with open(out) as f:
            return json.load(f)
