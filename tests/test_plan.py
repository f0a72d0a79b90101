"""`python -m albert.plan`: docs/memory.md's what-fits-where table (its main in this process: the
exit status it returns, what it prints), its errors (one real process: the exit status and the
lines the shell sees)."""

import pytest
from helpers import run_in_process

from albert.model.config import AlbertConfig
from albert.train.memory_plan import GIB, memory_plan


def test_what_fits_where_table_is_the_plans_largest_micro_batch():
    # `python -m albert.plan` (docs/memory.md's table): each cell is the largest micro-batch whose
    # plan fits with the safety margin, without / with recomputation.
    from albert.train.memory_plan import largest_fitting, plan_fits

    code, out, err = run_in_process("plan", ["--model_size", "large", "xxlarge",
                                             "--max_seq_length", "512", "--precision", "bf16",
                                             "--memory_budget_gb", "16", "80"])
    assert code == 0, err
    rows = out.strip().splitlines()
    assert rows[0] == "| model | seq | precision | 16 GB | 80 GB |"
    assert len(rows) == 4
    for row in rows[2:]:
        size, seq, precision, *cells = [c.strip() for c in row.strip("|").split("|")]
        config = AlbertConfig.from_preset(size)
        for gb, cell in zip((16, 80), cells, strict=True):
            for mode, m in zip(("none", "layers"), map(int, cell.split(" / ")), strict=True):
                args = dict(precision=precision, recompute=mode, ranks=8, accumulation=2)
                assert m == largest_fitting(config, int(seq), gb * GIB, **args)
                assert not plan_fits(memory_plan(config, 512, m + 1, **args), gb * GIB)
                if m:
                    assert plan_fits(memory_plan(config, 512, m, **args), gb * GIB)
    # xxlarge at 512 needs recomputation on 16 GB: the shared layer's per-application weight
    # gradients alone (12 x 0.8 GB) exceed it.
    assert rows[3].startswith("| xxlarge | 512 | bf16 | 0 / ")
    for value in ("0", "inf", "nan"):
        code, _, err = run_in_process("plan", ["--memory_budget_gb", value])
        assert code == 2 and f"error: --memory_budget_gb {value}: a size in GB must " \
            "be" in err
    # A length the model has no positions for is said so, and the search bound is "at least".
    code, out, err = run_in_process("plan", ["--model_size", "tiny", "--max_seq_length", "128",
                                             "1024", "--precision", "fp32",
                                             "--memory_budget_gb", "1000"])
    assert code == 0, err
    rows = out.strip().splitlines()
    assert rows[2].endswith(" / >= 65536 |") and "longer than tiny's 512 positions" in rows[3]


@pytest.mark.e2e
def test_plan_gives_one_message_per_bad_value():
    """Issue 24 item 15: one combined message blamed every flag for one bad value. A real
    process: the exit status the shell sees (`raise SystemExit(main())`) and exactly these lines
    on its stderr, nothing on stdout."""
    import subprocess
    import sys

    bad = subprocess.run([sys.executable, "-m", "albert.plan", "--memory_budget_gb", "16", "0",
                          "inf", "--max_seq_length", "128", "1", "--plan_ranks", "0"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.splitlines() == [
        "error: --memory_budget_gb 0: a size in GB must be above 0",
        "error: --memory_budget_gb inf: a size in GB must be a finite number",
        "error: --max_seq_length 1: a sequence length must be at least 2",
        "error: --plan_ranks 0: must be at least 1",
    ]


def test_plan_takes_a_huge_budget():
    """Issue 24 item 15: --memory_gb (now --memory_budget_gb) 1000000 was refused as not "above
    0"."""
    code, out, err = run_in_process("plan", ["--model_size", "tiny", "--max_seq_length", "128",
                                             "--precision", "fp32", "--memory_budget_gb",
                                             "1000000"])
    assert code == 0, err
    assert out.splitlines()[-1] == "| tiny | 128 | fp32 | >= 65536 / >= 65536 |"
