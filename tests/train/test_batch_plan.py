"""The batch plan (albert.train.batch_plan): a global batch made exactly of micro-batches,
accumulation and ranks, or refused; the automatic micro-batch's search."""

import pytest

from albert.train.batch_plan import PlanError, largest_micro_batch


def test_largest_micro_batch_makes_the_global_batch_exactly():
    calls = []

    def fits(m):
        calls.append(m)
        return m <= 20

    plan = largest_micro_batch(fits, global_batch=4096, ranks=8, why="the test budget")
    assert (plan.micro_batch, plan.accumulation, plan.ranks) == (16, 32, 8)
    assert plan.global_batch == 4096
    assert len(calls) <= 5  # bisected over the 10 divisors of 512
    # 96 per rank: 16 fits, 24 does not.
    plan = largest_micro_batch(lambda m: m <= 20, global_batch=192, ranks=2, why="x")
    assert (plan.micro_batch, plan.accumulation) == (16, 6)
    # A prime per-rank batch leaves 1 when the whole does not fit.
    plan = largest_micro_batch(lambda m: m <= 20, global_batch=37, ranks=1, why="x")
    assert (plan.micro_batch, plan.accumulation) == (1, 37)


def test_largest_micro_batch_says_so_and_stops():
    with pytest.raises(PlanError, match="not divisible by 8 rank"):
        largest_micro_batch(lambda m: True, global_batch=100, ranks=8, why="x")
    with pytest.raises(PlanError, match="not even a micro-batch of 1 fits 2.0 GB"):
        largest_micro_batch(lambda m: False, global_batch=64, ranks=1, why="2.0 GB")


def test_largest_micro_batch_of_a_huge_global_batch_answers_at_once():
    # The divisors are searched up to the square root: 10^12 sequences per rank is immediate.
    plan = largest_micro_batch(lambda m: m <= 1000, global_batch=10 ** 12, ranks=1, why="x")
    assert (plan.micro_batch, plan.accumulation) == (1000, 10 ** 9)
    prime = largest_micro_batch(lambda m: m <= 1000, global_batch=1_000_000_007, ranks=1, why="x")
    assert (prime.micro_batch, prime.accumulation) == (1, 1_000_000_007)


def test_batch_plan_is_exact_or_refused():
    from albert.train.batch_plan import resolve_batch_plan

    # Derived accumulation: 256 = 32 x 4 x 2; a global batch that is not a multiple is refused,
    # never rounded down to fewer sequences per update than asked.
    assert resolve_batch_plan(2, 32, 256, None, 8).accumulation == 4
    for ranks, per_gpu, global_batch in ((2, 32, 250), (1, 32, 48), (4, 8, 16)):
        with pytest.raises(PlanError, match=f"^global_batch_size {global_batch} is not a "
                                            "multiple"):
            resolve_batch_plan(ranks, per_gpu, global_batch, None, 8)
    # Derived micro-batch: 96 = 12 x 4 x 2; 100 is not divisible by 2 x 4.
    assert resolve_batch_plan(2, None, 96, 4, 8).micro_batch == 12
    with pytest.raises(PlanError, match="not divisible by 2 rank"):
        resolve_batch_plan(2, None, 100, 4, 8)
    with pytest.raises(PlanError, match="disagrees"):
        resolve_batch_plan(2, 8, 100, 4, 8)
    # The default micro-batch applies when only the global batch is given.
    plan = resolve_batch_plan(1, None, 64, None, 16)
    assert (plan.micro_batch, plan.accumulation, plan.global_batch) == (16, 4, 64)
    for setting, args in (("per_gpu_batch_size", (1, 0, None, None, 8)),
                          ("global_batch_size", (1, None, 0, None, 8)),
                          ("gradient_accumulation_steps", (1, None, None, 0, 8))):
        with pytest.raises(PlanError, match=f"^{setting} must be at least 1") as refused:
            resolve_batch_plan(*args)
        # The command line names it as its flag (albert.cli.flags.user_errors).
        assert refused.value.setting == setting
        assert refused.value.on_command_line().startswith(f"--{setting} must be at least 1")
