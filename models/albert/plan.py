"""`python -m albert.plan`: the largest micro-batch per GPU that the memory plan fits, for each
preset, sequence length, precision and memory size (docs/memory.md's "What fits where" table):

    python -m albert.plan --memory_budget_gb 16 32 80 141 --max_seq_length 128 512

The arithmetic is `albert.train.memory_plan`'s.
"""

from __future__ import annotations

import math
import sys

from albert.cli import flags
from albert.model.config import PRESETS
from albert.train.memory_plan import COMPUTE_BYTES, fits_table


def _bad_values(args) -> list[str]:
    """One message per value `python -m albert.plan` cannot plan for, each naming it."""
    problems = []
    for gb in args.memory_budget_gb:
        # Any finite size plans (a cell past the search bound reads ">= 65536").
        if not math.isfinite(gb):
            problems.append(f"--memory_budget_gb {gb:g}: a size in GB must be a finite number")
        elif gb <= 0:
            problems.append(f"--memory_budget_gb {gb:g}: a size in GB must be above 0")
    problems += [f"--max_seq_length {n}: a sequence length must be at least 2"
                 for n in args.max_seq_length if n < 2]
    problems += [f"--{name} {getattr(args, name)}: must be at least 1"
                 for name in ("plan_ranks", "gradient_accumulation_steps")
                 if getattr(args, name) < 1]
    return problems


def build_parser() -> flags.Parser:
    p = flags.Parser(prog="python -m albert.plan", description=(
        "The largest micro-batch per GPU that the memory plan fits, without / with "
        "--recompute layers, for each preset, sequence length and precision."))
    # The runners' flags, each taking several values: one table row per combination; the old
    # spellings are this tool's plurals.
    renamed = flags.Renamed
    p.add_argument("--model_size", action=renamed, old=("--model_sizes",), nargs="+",
                   default=list(PRESETS), choices=list(PRESETS), metavar="SIZE",
                   help=f"presets among {', '.join(PRESETS)} (default: all)")
    p.add_argument("--max_seq_length", action=renamed, old=("--seq_lengths",), nargs="+",
                   type=int, default=[128, 512], help="sequence lengths")
    p.add_argument("--precision", action=renamed, old=("--precisions",), nargs="+",
                   default=["fp32", "bf16"], choices=list(COMPUTE_BYTES),
                   help="fp16 plans as bf16")
    p.add_argument("--memory_budget_gb", action=renamed, old=("--memory_gb",), nargs="+",
                   type=float, default=[16, 32, 80, 141],
                   help="memory of one GPU, GB (GiB): one column each")
    p.add_argument("--plan_ranks", action=renamed, old=("--ranks",), type=int, default=8,
                   help="ranks (GPUs) training together")
    p.add_argument("--gradient_accumulation_steps", action=renamed, old=("--accumulation",),
                   type=int, default=2, help="micro-batches per update")
    return p


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def run(args) -> int:
    """The table on stdout; every value it cannot plan for, one line each, and status 2."""
    problems = _bad_values(args)
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    gbs = [int(gb) if gb == int(gb) else gb for gb in args.memory_budget_gb]
    print("\n".join(fits_table(args.model_size, args.max_seq_length, args.precision, gbs,
                               ranks=args.plan_ranks,
                               accumulation=args.gradient_accumulation_steps)))
    return 0


def main(argv=None) -> int:
    return flags.run_main(parse_args, run, argv, needs_tensorflow=False)  # the arithmetic alone


if __name__ == "__main__":
    raise SystemExit(main())
