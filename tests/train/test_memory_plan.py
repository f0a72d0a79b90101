"""The memory plan and the batch plan with its automatic micro-batch (albert.train.memory_plan,
albert.train.batch_plan), checked against real models."""

import pytest

from albert.model.config import AlbertConfig
from albert.train.batch_plan import PlanError, largest_micro_batch
from albert.train.memory_plan import GIB, activation_bytes, memory_plan, parameter_count


@pytest.mark.parametrize("overrides", [{}, {"num_hidden_groups": 2, "inner_group_num": 2},
                                       {"pre_layer_norm": True}],
                         ids=["tiny", "groups", "pre_ln"])
def test_parameter_count_is_exact_for_every_head(overrides):
    from albert import AlbertForPreTraining, AlbertForQuestionAnswering
    from albert.model.modeling import AlbertForSequenceClassification

    config = AlbertConfig.from_preset("tiny", vocab_size=500, **overrides)
    for head, model in (("pretraining", AlbertForPreTraining(config)),
                        ("squad", AlbertForQuestionAnswering(config)),
                        ("classifier", AlbertForSequenceClassification(config, num_labels=3))):
        model.build_for_config()
        real = sum(int(v.numpy().size) for v in model.weights)
        assert parameter_count(config, head, num_labels=3) == real, head


def test_published_sizes():
    # ALBERT v2 as released (with the MLM and SOP heads): base 11.8M ... xxlarge 223M.
    counts = {name: parameter_count(AlbertConfig.from_preset(name))
              for name in ("base", "large", "xlarge", "xxlarge")}
    assert counts == {"base": 11_813_810, "large": 17_847_474, "xlarge": 59_021_490,
                      "xxlarge": 223_158_450}


def test_plan_parts():
    config = AlbertConfig.from_preset("xxlarge")
    params = parameter_count(config)
    plan = memory_plan(config, 512, 8, precision="bf16")
    # Float32 weights, gradients and two optimizer slots whatever the precision.
    assert (plan.weights, plan.gradients, plan.optimizer) == (4 * params, 4 * params, 8 * params)
    assert plan.allreduce == 0  # one rank: nothing to reduce
    assert plan.total == (plan.weights + plan.gradients + plan.optimizer + plan.activations
                          + plan.runtime)
    # Accumulation keeps the running sum beside each micro-batch's gradients.
    assert memory_plan(config, 512, 8, accumulation=4).gradients == 8 * params
    eight = memory_plan(config, 512, 8, ranks=8)
    assert eight.allreduce > 4 * params  # the averaged copy and Horovod's fusion buffer
    fp16_wire = memory_plan(config, 512, 8, ranks=8, fp16_allreduce=True)
    assert fp16_wire.allreduce > eight.allreduce  # the fp16 copies on the way
    line = plan.describe()
    assert line.startswith("memory plan: ") and "GB per GPU" in line and "recompute none" in line


def test_activations_shrink_with_recompute_and_lower_precision():
    config = AlbertConfig.from_preset("xlarge")
    none = activation_bytes(config, 512, 8)
    layers = activation_bytes(config, 512, 8, recompute="layers")
    assert layers < 0.25 * none
    assert activation_bytes(config, 512, 8, precision="bf16") < 0.85 * none
    # Without recompute the activations grow with the micro-batch (and quadratically with the
    # sequence through the attention scores); dropout adds its masks.
    assert activation_bytes(config, 512, 16) > 1.9 * none
    assert activation_bytes(config, 256, 8) < 0.5 * none
    dropout = AlbertConfig.from_preset("xlarge", hidden_dropout_prob=0.1,
                                       attention_probs_dropout_prob=0.1)
    assert activation_bytes(dropout, 512, 8) > 1.2 * none


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


def test_plan_decides_more_fits_with_recompute():
    config = AlbertConfig.from_preset("xlarge")
    budget = 16 * GIB

    def fits(recompute):
        return lambda m: memory_plan(config, 512, m, recompute=recompute).total <= budget

    without = largest_micro_batch(fits("none"), 4096, 1, why="16 GB")
    with_recompute = largest_micro_batch(fits("layers"), 4096, 1, why="16 GB")
    assert with_recompute.micro_batch >= 4 * without.micro_batch
    assert without.micro_batch * without.accumulation == 4096


def test_bad_names_are_errors():
    config = AlbertConfig.from_preset("tiny")
    with pytest.raises(ValueError, match="--recompute must be one of"):
        memory_plan(config, 128, 8, recompute="attention")
    with pytest.raises(ValueError, match="--precision must be one of"):
        memory_plan(config, 128, 8, precision="fp8")
    with pytest.raises(ValueError, match="head must be one of"):
        parameter_count(config, "ner")


@pytest.mark.e2e
def test_what_fits_where_table_is_the_plans_largest_micro_batch():
    # `python -m albert.plan` (the README's table): each cell is the largest micro-batch whose
    # plan fits with the safety margin, without / with recomputation.
    import subprocess
    import sys

    from albert.train.memory_plan import largest_fitting, plan_fits

    proc = subprocess.run([sys.executable, "-m", "albert.plan", "--model_size", "large",
                           "xxlarge", "--max_seq_length", "512", "--precision", "bf16",
                           "--memory_budget_gb", "16", "80"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = proc.stdout.strip().splitlines()
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
        bad = subprocess.run([sys.executable, "-m", "albert.plan", "--memory_budget_gb", value],
                             capture_output=True, text=True, timeout=120)
        assert bad.returncode == 2 and f"error: --memory_budget_gb {value}: a size in GB must " \
            "be" in bad.stderr
    # A length the model has no positions for is said so, and the search bound is "at least".
    proc = subprocess.run([sys.executable, "-m", "albert.plan", "--model_size", "tiny",
                           "--max_seq_length", "128", "1024", "--precision", "fp32",
                           "--memory_budget_gb", "1000"], capture_output=True, text=True,
                          timeout=120)
    rows = proc.stdout.strip().splitlines()
    assert rows[2].endswith(" / >= 65536 |") and "longer than tiny's 512 positions" in rows[3]


def test_batch_plan_is_exact_or_refused():
    from albert.train.batch_plan import resolve_batch_plan

    # Derived accumulation: 256 = 32 x 4 x 2; a global batch that is not a multiple is refused,
    # never rounded down to fewer sequences per update than asked.
    assert resolve_batch_plan(2, 32, 256, None, 8).accumulation == 4
    for ranks, per_gpu, global_batch in ((2, 32, 250), (1, 32, 48), (4, 8, 16)):
        with pytest.raises(PlanError, match=f"--global_batch_size {global_batch} is not a "
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
    for flag, args in (("--per_gpu_batch_size", (1, 0, None, None, 8)),
                       ("--global_batch_size", (1, None, 0, None, 8)),
                       ("--gradient_accumulation_steps", (1, None, None, 0, 8))):
        with pytest.raises(PlanError, match=f"{flag} must be at least 1"):
            resolve_batch_plan(*args)


@pytest.mark.e2e
def test_item15_plan_gives_one_message_per_bad_value():
    """Issue 24 item 15: one combined message blamed every flag for one bad value, and
    --memory_gb (now --memory_budget_gb) 1000000 was refused as not "above 0"."""
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
    huge = subprocess.run([sys.executable, "-m", "albert.plan", "--model_size", "tiny",
                           "--max_seq_length", "128", "--precision", "fp32", "--memory_budget_gb",
                           "1000000"], capture_output=True, text=True, timeout=120)
    assert huge.returncode == 0, huge.stderr
    assert huge.stdout.splitlines()[-1] == "| tiny | 128 | fp32 | >= 65536 / >= 65536 |"
