"""A run's memory (albert.train.memory): --per_gpu_batch_size auto chooses the largest micro-batch
the memory plan (or a trial) lets fit and says why, the batch and memory flags that cannot work
are refused, --plan_only's lines, the trial steps' synthetic batches."""

import pytest

from albert.errors import SettingError
from albert.model.config import AlbertConfig
from albert.train.batch_plan import BatchPlan
from albert.train.memory import (
    check_batching,
    memory_plan_of,
    plan_only_lines,
    resolve_auto_batch,
)
from albert.train.memory_plan import GIB, plan_fits


def pretraining_spec(*flags):
    from albert import run_pretraining

    return run_pretraining.resolve(run_pretraining.parse_args([
        "--train_dir", "shards", "--total_steps", "10", "--max_seq_length", "128",
        "--model_size", "base", *flags]))


def test_auto_chooses_the_largest_divisor_whose_plan_fits_the_budget():
    spec = pretraining_spec("--per_gpu_batch_size", "auto", "--global_batch_size", "256",
                            "--memory_budget_gb", "4")
    config = AlbertConfig.from_preset("base")
    batching, line = resolve_auto_batch(spec, 2, config, head="pretraining")
    micro, accumulation = batching.per_gpu_batch_size, batching.gradient_accumulation_steps
    assert micro * accumulation * 2 == 256 and 128 % micro == 0
    plan = batching.plan(2)
    assert plan_fits(memory_plan_of(spec, config, plan, head="pretraining"), 4 * GIB)
    bigger = min(m for m in (1, 2, 4, 8, 16, 32, 64, 128) if m > micro)
    assert not plan_fits(memory_plan_of(spec, config, BatchPlan(2, bigger, 128 // bigger),
                                        head="pretraining"), 4 * GIB)
    assert line.startswith(f"--per_gpu_batch_size auto: micro-batch {micro} x accumulation "
                           f"{accumulation} x 2 rank(s) = 256")
    assert "of 4.00 GB (--memory_budget_gb)" in line and f"; {bigger} would plan" in line


def test_auto_with_a_trial_takes_the_trials_answer():
    spec = pretraining_spec("--per_gpu_batch_size", "auto", "--global_batch_size", "96")
    batching, line = resolve_auto_batch(spec, 1, AlbertConfig.from_preset("base"),
                                        head="pretraining", trial=lambda m: m <= 13)
    assert (batching.per_gpu_batch_size, batching.gradient_accumulation_steps) == (12, 8)
    assert "ran on this GPU; 16 ran out of memory" in line


@pytest.mark.parametrize("fields, message, on_command_line", [
    ({"per_gpu_batch_size": "auto"}, "^per_gpu_batch_size auto needs global_batch_size",
     "--per_gpu_batch_size auto needs --global_batch_size"),
    ({"per_gpu_batch_size": "auto", "global_batch_size": 64, "gradient_accumulation_steps": 2},
     "itself; drop gradient_accumulation_steps$",
     "--per_gpu_batch_size auto chooses the accumulation itself; drop "
     "--gradient_accumulation_steps"),
    ({"memory_budget_gb": float("nan")},
     "^memory_budget_gb must be a size in GB above 0, got nan$",
     "--memory_budget_gb must be a size in GB above 0, got nan"),
])
def test_batching_that_cannot_work_is_refused_naming_the_setting(fields, message,
                                                                  on_command_line):
    """The library names each Batching field (a SettingError, no flag in sight); the same
    mistake made on the command line is named by the flags of the same names."""
    from albert.errors import FlagError
    from albert.train.run_spec import Batching

    with pytest.raises(SettingError, match=message) as refused:
        check_batching(Batching(**fields))
    assert "--" not in str(refused.value)
    assert refused.value.on_command_line().startswith(on_command_line)

    flags = [item for name, value in fields.items() for item in (f"--{name}", str(value))]
    with pytest.raises(FlagError) as refused:
        pretraining_spec(*flags)
    assert str(refused.value).startswith(on_command_line)


def test_nothing_fitting_is_a_flag_error_saying_what_one_sequence_plans():
    spec = pretraining_spec("--per_gpu_batch_size", "auto", "--global_batch_size", "8",
                            "--memory_budget_gb", "0.01")
    with pytest.raises(SettingError, match=r"not even a micro-batch of 1 fits 90% of 0\.01 GB "
                                           r"\(memory_budget_gb\): a micro-batch of 1 plans"):
        resolve_auto_batch(spec, 1, AlbertConfig.from_preset("base"), head="pretraining")


def test_plan_only_lines_plan_the_run_and_warn_when_it_does_not_fit():
    lines = plan_only_lines(pretraining_spec("--per_gpu_batch_size", "64",
                                             "--memory_budget_gb", "1"), 8, head="pretraining")
    assert len(lines) == 3
    assert lines[0].startswith("batch plan: 64 x 1 x 8 = 512 ") and "10 updates" in lines[0]
    assert lines[1].startswith("memory plan: ") and "micro-batch 64 at sequence length 128" \
        in lines[1]
    assert lines[2].startswith("warning: this plan does not fit 90% of --memory_budget_gb 1;")
    # Within the budget: no warning.
    fits = plan_only_lines(pretraining_spec("--per_gpu_batch_size", "8",
                                            "--memory_budget_gb", "80"), 8, head="pretraining")
    assert len(fits) == 2 and not any(line.startswith("warning") for line in fits)
    with pytest.raises(SettingError, match="give memory_budget_gb"):
        plan_only_lines(pretraining_spec("--per_gpu_batch_size", "auto",
                                         "--global_batch_size", "64"), 1, head="pretraining")
