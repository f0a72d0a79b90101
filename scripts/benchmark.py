"""Measure training throughput, MFU and scaling; print one JSON object (and write it to --output).

    .venv/bin/python scripts/benchmark.py --model_size base --max_seq_length 128 \\
        --per_gpu_batch_size 8 --precision fp32 --compare_hf

What is timed is the real update run_pretraining uses (Trainer.train_step: XLA micro-batch
gradients, accumulation, allreduce, clipping, LAMB) on synthetic batches of the real shapes, after
warm-up, repeated --repeats times; the reported step time is the median and the spread is min/max.

FLOPs per sequence (matmuls only; training = 3 x forward: the backward pass costs two forwards),
S = sequence, P = predicted positions, E/H/I = embedding/hidden/FFN sizes, L = layers, V = vocab:
    forward = 2*S*E*H                                 embedding projection
            + L * (8*S*H^2 + 4*S^2*H + 4*S*H*I)       Q/K/V/out, scores + context, FFN
            + 2*P*H*E + 2*P*E*V                       MLM head at the masked positions only
            + 2*H^2 + 4*H                             pooler, SOP classifier
MFU = achieved FLOP/s / peak. On CPU the peak is measured in the same run with a large matmul in
the compute dtype (float32, or bfloat16 with --precision bf16), the faster of TensorFlow's kernel
and XLA's; on a GPU it is the published dense peak for the precision (the measured matmul peak is
reported beside it).

--compare_hf runs transformers' model at the same precision (torch.autocast for bf16/fp16, with
a GradScaler for fp16) on the same kind of device (CUDA when torch sees a GPU).

Stable JSON keys: xla (which step functions XLA compiled, and why), seq_per_sec, tokens_per_sec,
step_time_s, step_time_min_s, step_time_max_s,
flops_per_seq, achieved_flops, peak_flops, measured_matmul_flops, mfu; with --compare_hf also
hf_seq_per_sec, ratio_vs_hf; with --compare_recompute other_recompute,
other_recompute_step_time_s and recompute_time_ratio (step time with --recompute layers over
without, the median of interleaved pairs); with --input_pipeline reader_records_per_sec,
reader_vs_step;
with --memory peak_memory_bytes (measured through the warm-up updates: on a CPU the peak
resident memory of this process, on a GPU the allocator's peak from
tf.config.experimental.get_memory_info), planned_memory_bytes (albert.train.memory_plan's
estimate of the same quantity: on a GPU without the runtime term, which the allocator does not see),
planned_memory (the plan's parts, bytes) and, with --memory_budget_gb,
planned_largest_micro_batch ({"none": m, "layers": m}: the largest micro-batch the plan fits in
the budget, with --per_gpu_batch_size auto's margin, without and with recomputation) and, with
--auto_global_batch, auto_micro_batch, auto_accumulation and auto_reason (auto's choice and log
line); with --horovod N scaling (seq_per_sec for 1 and N
processes, weak_scaling_efficiency); with --restart_cost N (with --input_pipeline) restart:
[{records, restore_s, replay_s, state_mb, same_next_batch}] after 10 updates and after N records;
with --data_prep data_prep_instances_per_sec, data_prep_input_mb and data_prep_peak_memory_mb (the
generator's whole process tree); with --profile profile_top_ops (type, source
"tensorflow" or "xla", self_time_ms_per_step, share), profile_xla_modules (each XLA-compiled step
function's share), profile_coverage (TensorFlow op, XLA thunk and TensorFlow "idle" milliseconds
per step) and, where XLA ran but left no events, profile_not_covered; with --squad_padding the
keys below.

--squad_padding times SQuAD prediction and fine-tuning updates with every window padded to
--max_seq_length (padding "max") and with windows padded to their batch (padding "batch":
albert.data.squad's prediction_batches and training_batches, length buckets of 64), on one
AlbertForQuestionAnswering of --model_size, its repeats interleaved. The question set is built in
the run, in SQuAD v2.0 format, with contexts of realistic length: runs of 5 to 20 consecutive
sentences of CPython's help topics (albert.demo.squad_sample.passages((5, 20)), the bundled corpus),
a fact planted in each, --squad_questions questions (a third unanswerable), windowed at
--max_seq_length with doc_stride 128 and 64 question tokens, with a 3,000-piece vocabulary trained
on the same help topics (or --spm_model). At 384 about a quarter of the positions of fixed padding
are padding, as on the real SQuAD v2.0 dev set. Prediction: every window once per repeat,
--squad_predict_batch windows a batch; fine-tuning: --steps updates of --per_gpu_batch_size x
--gradient_accumulation_steps windows (AdamW, the XLA plan of --xla) per repeat, after --warmup
updates, an update at each bucket length and one prediction pass, which compile every shape.
Keys: squad_windows (the prediction windows), squad_padding_share ({"max", "batch"} x {"predict",
"finetune"}: the share of the positions computed that are padding), squad_widths ({"predict",
"finetune"}: how many batch-padded batches or updates had each length), squad_predict_seq_per_sec
and squad_finetune_seq_per_sec ({"max", "batch"}: windows per second, the median repeat),
squad_predict_speedup and squad_finetune_speedup (batch over max), squad_xla (the XLA plan).

The measurements live in scripts/benchmarks/, one module each (its __init__ lists them); this
file is their command line: the flags, which measurements run, the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# As every command's start (albert.cli.quiet_start.start_environment), before TensorFlow loads:
# the speeds measured here are the commands' own.
os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")
# Run as a script, scripts/ is already first on sys.path; loaded from its path (importlib, the
# tests) it is not, and the measurements below are a package beside this file.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from benchmarks.data_prep import bench_data_prep  # noqa: E402
from benchmarks.horovod import bench_horovod  # noqa: E402
from benchmarks.reader import bench_reader  # noqa: E402
from benchmarks.restart import bench_restart, restart_case  # noqa: E402
from benchmarks.squad_padding import bench_squad_padding  # noqa: E402
from benchmarks.step import bench_step  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model_size", default="base")
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--max_predictions_per_seq", type=int, default=20)
    p.add_argument("--per_gpu_batch_size", type=int, default=8)
    p.add_argument("--gradient_accumulation_steps", type=int, default=1)
    p.add_argument("--precision", choices=("fp32", "fp16", "bf16"), default="fp32")
    p.add_argument("--xla", choices=("auto", "on", "off"), default="auto",
                   help="as in run_pretraining: which step functions XLA compiles")
    p.add_argument("--skip_xla", action="store_true", help="same as --xla off")
    p.set_defaults(eager=False)  # the Execution the benchmarks plan XLA for: never eager
    p.add_argument("--recompute", choices=("none", "layers"), default="none",
                   help="recompute each transformer layer's activations in the backward pass")
    p.add_argument("--compare_recompute", action="store_true",
                   help="also time the other --recompute mode in this run, interleaved with it "
                        "(a shared VM drifts between runs): recompute_time_ratio")
    p.add_argument("--memory", action="store_true",
                   help="report the measured peak memory of the update beside the memory plan")
    p.add_argument("--memory_budget_gb", type=float, default=None,
                   help="with --memory: also report the largest micro-batch the plan fits in "
                        "this many GB (GiB), with and without recomputation")
    p.add_argument("--auto_global_batch", type=int, default=None, metavar="G",
                   help="with --memory: also choose the micro-batch as --per_gpu_batch_size auto "
                        "does for --global_batch_size G on this rank (on a GPU by trial steps, "
                        "beside this run's own state; on a CPU from the plan)")
    p.add_argument("--vocab_size", type=int, default=30000)
    p.add_argument("--steps", type=int, default=10, help="timed updates per repeat")
    p.add_argument("--warmup", type=int, default=3, help="untimed updates first (compilation)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--compare_hf", action="store_true",
                   help="time transformers' PyTorch AlbertForPreTraining in the same run")
    p.add_argument("--input_pipeline", default=None, metavar="TFRECORD_PATTERN",
                   help="also time the reader on these TFRecords")
    p.add_argument("--horovod", type=int, default=0, metavar="N",
                   help="run under horovodrun with 1 and N processes: weak scaling")
    p.add_argument("--restart_cost", type=int, default=0, metavar="RECORDS",
                   help="with --input_pipeline: time putting the input stream back where a run "
                        "stopped, after 10 updates and after RECORDS consumed records, by "
                        "restoring the saved iterator state (what run_pretraining does) and by "
                        "replaying")
    p.add_argument("--restart_case", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--data_prep", default=None, metavar="TEXT_FILE",
                   help="also time create_pretraining_data on this text")
    p.add_argument("--spm_model", default=None, help="vocabulary for --data_prep")
    p.add_argument("--profile", default=None, metavar="DIR",
                   help="also trace --steps updates with the TensorFlow profiler into DIR (view: "
                        "xprof --logdir DIR) and report the op types taking the most time")
    p.add_argument("--squad_padding", action="store_true",
                   help="time SQuAD prediction and fine-tuning with windows padded to "
                        "--max_seq_length and to their batch (see the docstring)")
    p.add_argument("--squad_questions", type=int, default=600,
                   help="with --squad_padding: questions in the built SQuAD set")
    p.add_argument("--squad_predict_batch", type=int, default=32,
                   help="with --squad_padding: windows per prediction batch")
    p.add_argument("--output", default="benchmark.json")
    p.add_argument("--no_step", action="store_true", help="skip the training-step benchmark")
    args = p.parse_args(argv)
    problem = _bad_value(args)
    if problem:
        # One line (main's user_errors), as the runners answer a bad flag (argparse's error adds
        # the usage).
        from albert.errors import FlagError

        raise FlagError(problem)
    return args


def _bad_value(args) -> str | None:
    """The first flag value the benchmark cannot run with, named, or None. Checked before
    TensorFlow is imported: a 0 reached a division by --steps, range(--repeats) left no time
    to report, and a sequence too short for its predictions failed deep in numpy."""
    from albert.model.config import PRESETS

    minimums = {"steps": 1, "repeats": 1, "warmup": 0, "per_gpu_batch_size": 1,
                "gradient_accumulation_steps": 1, "max_predictions_per_seq": 1, "horovod": 0,
                "restart_cost": 0, "squad_questions": 1, "squad_predict_batch": 1}
    for name, minimum in minimums.items():
        if getattr(args, name) < minimum:
            return f"--{name} must be at least {minimum}, got {getattr(args, name)}"
    if args.model_size not in PRESETS:
        return f"--model_size {args.model_size!r} is unknown; expected one of {sorted(PRESETS)}"
    if args.vocab_size < 6:  # synthetic ids are drawn above the 5 special ones
        return f"--vocab_size must be at least 6, got {args.vocab_size}"
    positions = PRESETS[args.model_size].get("max_position_embeddings", 512)
    if not 3 <= args.max_seq_length <= positions:
        return (f"--max_seq_length must be within [3, {positions}] (the {args.model_size} "
                f"model's positions), got {args.max_seq_length}")
    # Masked positions are drawn without [CLS] and the final [SEP].
    room = args.max_seq_length - 2
    if args.max_predictions_per_seq > room:
        return (f"--max_seq_length {args.max_seq_length} leaves {room} positions to mask, fewer "
                f"than --max_predictions_per_seq {args.max_predictions_per_seq}: give "
                f"--max_predictions_per_seq {room} or less, or a longer --max_seq_length")
    if args.memory_budget_gb is not None and not 0 < args.memory_budget_gb < 1e6:
        return f"--memory_budget_gb must be a size in GB above 0, got {args.memory_budget_gb}"
    if args.memory_budget_gb is not None and not args.memory:
        return "--memory_budget_gb needs --memory"
    if args.data_prep and not args.spm_model:  # before the other benchmarks, not after them
        return "--data_prep needs --spm_model"
    if args.auto_global_batch is not None:
        if not args.memory:
            return "--auto_global_batch needs --memory"
        if args.auto_global_batch < 1:
            return f"--auto_global_batch must be at least 1, got {args.auto_global_batch}"
    if args.squad_padding and args.max_seq_length < 64 + 4:
        return (f"--squad_padding windows 64 question tokens: --max_seq_length must be at "
                f"least 68, got {args.max_seq_length}")
    return None


def main(argv=None):
    from albert.cli.flags import user_errors

    with user_errors():  # a flag that cannot work, a file that cannot be used: one line, exit 2
        return _main(argv)


def _main(argv):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    result = {"config": {k: v for k, v in vars(args).items() if k != "output"}}
    if args.profile:
        try:
            import xprof  # noqa: F401
        except ImportError:
            raise SystemExit("error: --profile needs xprof to summarise the trace; run "
                             "scripts/setup.sh or pip install -e '.[profile]'") from None
    if not args.no_step:  # a FlagError: --auto_global_batch that nothing fits, named by the flags
        result.update(bench_step(args))
    if args.restart_case:
        result["restart"] = restart_case(args)
    elif args.input_pipeline and args.restart_cost:
        result.update(bench_restart(args, argv))
    elif args.input_pipeline:
        result.update(bench_reader(args, result.get("seq_per_sec")))
    if args.horovod:
        result.update(bench_horovod(args, argv))
    if args.data_prep:
        result.update(bench_data_prep(args))
    if args.squad_padding:
        result.update(bench_squad_padding(args))
    rank = int(os.environ.get("HOROVOD_RANK", "0"))
    if rank == 0:
        text = json.dumps(result, indent=2)
        print(text)
        with open(args.output, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
