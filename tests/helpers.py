"""What several test files share (fixtures live in conftest.py): the repository root, the
sample records' shapes, a tiny Trainer, and running a tool as a user does (a process with the
user's environment) or in this process (its main)."""

import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ, PREDS = 64, 10  # the sample records' sequence length and predictions per sequence
START_UP_NOISE = ("absl::InitializeLog", "oneDNN custom operations")


def base_args(records, vocab, out, **overrides):
    args = {
        "--filesystem_prefix": str(records), "--train_dir": "train", "--model_size": "tiny",
        "--spm_model": vocab, "--max_seq_length": str(SEQ),
        "--max_predictions_per_seq": str(PREDS), "--per_gpu_batch_size": "8",
        "--total_steps": "6", "--learning_rate": "0.005", "--log_frequency": "1",
        "--checkpoint_dir": str(out / "ckpt"), "--log_dir": str(out / "logs"),
        "--skip_xla": None, "--no_progress": None,
    }
    args.update(overrides)
    argv = []
    for k, v in args.items():
        if v is False:
            continue
        argv.append(k)
        if v is not None:
            argv.extend(v if isinstance(v, list) else [v])
    return argv


def write_records(path, n, seq, preds, gzip=False):
    """n tiny pretraining records of the given shapes, through the generator's own writer."""
    import tensorflow as tf

    from albert.data.tfrecord import TFRecordWriter

    def ints(k):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[1] * k))

    example = tf.train.Example(features=tf.train.Features(feature={
        "input_ids": ints(seq), "input_mask": ints(seq), "segment_ids": ints(seq),
        "masked_lm_positions": ints(preds), "masked_lm_ids": ints(preds),
        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(value=[1.0] * preds)),
        "next_sentence_labels": ints(1),
    })).SerializeToString()
    with TFRecordWriter(str(path), gzip_compress=gzip) as writer:
        for _ in range(n):
            writer.write(example)


def damage(files):
    """Truncate files[1] mid-record and flip one byte inside a record of files[2]."""
    data = open(files[1], "rb").read()
    open(files[1], "wb").write(data[: len(data) // 2])
    data = bytearray(open(files[2], "rb").read())
    data[len(data) // 2] ^= 0x5A
    open(files[2], "wb").write(bytes(data))


def as_a_user_runs(module, *argv, **kwargs):
    """`python -m albert.<module> argv` in the environment a user has: without the log
    variables the tests set (conftest)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "TRANSFORMERS_VERBOSITY")}
    return subprocess.run([sys.executable, "-m", f"albert.{module}", *map(str, argv)],
                          capture_output=True, text=True, timeout=300, env=env, **kwargs)


def start_up_noise(stderr):
    """TensorFlow's and absl's start-up lines in `stderr`."""
    return [line for line in stderr.splitlines() if any(n in line for n in START_UP_NOISE)]


def last_reading_bar(stderr, path):
    """The last state of a tool's "reading:" progress bar over the input file `path`, checked to
    have reached 100% of the file's size."""
    from tqdm import tqdm

    total = tqdm.format_sizeof(os.path.getsize(path), divisor=1024)
    bars = [line for line in stderr.replace("\r", "\n").splitlines()
            if line.startswith("reading: ")]
    assert bars and bars[-1].startswith("reading: 100%"), stderr
    assert f"| {total}/{total} [" in bars[-1], bars[-1]
    return bars[-1]


def bad_lines(stdout):
    return [line for line in stdout.splitlines() if line.startswith("BAD ")]


def make_trainer(precision="fp32", xla=False, lr=1e-3, vocab=2000, config_overrides=None,
                 dist=None, optimizer=None, **kwargs):
    """A Trainer over a 2-layer tiny ALBERT (vocabulary 2000), seeded; optimizer(variables)
    builds another optimizer than LAMB. xla: both step functions compiled or neither, unless
    xla_gradient says otherwise for the gradient; eager=True: neither traced."""
    import keras

    from albert import AlbertConfig, AlbertForPreTraining
    from albert.tasks.losses import PRETRAINING_METRICS, pretraining_loss
    from albert.train.distributed import Distributed
    from albert.train.optimization import make_optimizer
    from albert.train.precision import set_precision
    from albert.train.trainer import Trainer
    from albert.train.xla_plan import EAGER, XlaPlan

    set_precision(precision)
    keras.utils.set_random_seed(0)
    config = AlbertConfig.from_preset("tiny", vocab_size=vocab, num_hidden_layers=2,
                                      **{"classifier_dropout_prob": 0.0,
                                         **(config_overrides or {})})
    model = AlbertForPreTraining(config).build_for_config()
    gradient = kwargs.pop("xla_gradient", None)
    plan = (EAGER if kwargs.pop("eager", False)
            else XlaPlan(xla if gradient is None else gradient, xla, "the test's"))
    opt = (optimizer or (lambda v: make_optimizer("lamb", v)))(model.trainable_variables)
    return Trainer(model, pretraining_loss, opt, lambda step: lr, dist or Distributed(),
                   metric_names=PRETRAINING_METRICS, precision=precision, xla=plan, **kwargs)


def signalled_at(cmd, marker: str, send, timeout=300) -> tuple[int, str]:
    """`cmd` started in a process group of its own; once `marker` appears in its output (stdout
    and stderr together), send(proc) (a signal to it, to its process group or to the processes
    it started); then its exit: (exit status, everything it printed). Killed with its group if
    it is still running when this returns."""
    import signal

    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, start_new_session=True)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if marker in line:
                send(proc)
                break
        rest, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, "".join(seen) + rest


def run_in_process(module: str, argv) -> tuple:
    """`python -m albert.<module> argv` as main(argv) in this process: (exit status, stdout,
    stderr, the tool's log lines included), with sys.argv and __main__ as that command's (a run
    records its command line from them). For the errors a command gives, the plan it prints, or
    a short run whose files and lines are what a test reads, without an interpreter and
    TensorFlow start per case; an error that escapes as a traceback fails the test outright.
    tests/cli/test_flags.py keeps one real process per runner for the exit status and the
    single line."""
    import contextlib
    import importlib
    import importlib.util
    import io
    import logging

    out, err = io.StringIO(), io.StringIO()
    main = sys.modules["__main__"]
    typed = getattr(main, "__spec__", None), sys.argv
    main.__spec__ = importlib.util.find_spec(f"albert.{module}")
    sys.argv = [main.__spec__.origin, *map(str, argv)]
    # The tool's log lines go where a process writes them (its stderr, as every tool's
    # logging.basicConfig sets up); pytest's own handlers would otherwise keep them.
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(message)s"))
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = importlib.import_module(f"albert.{module}").main([str(a) for a in argv])
            except SystemExit as e:
                code = e.code
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
        main.__spec__, sys.argv = typed
    return code, out.getvalue(), err.getvalue()


def tiny_config(vocab_size=2000):
    """A 2-layer ALBERT small enough to export and serve in a test."""
    from albert import AlbertConfig

    return AlbertConfig(vocab_size=vocab_size, embedding_size=16, hidden_size=32,
                        num_hidden_layers=2, num_hidden_groups=2, num_attention_heads=4,
                        intermediate_size=48, max_position_embeddings=64)


def serving_inputs(seed=0):
    """Two batches ("a", "b") with different batch sizes and sequence lengths, padded rows
    included, as a served model receives them: {case_input_name: int32 array}."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = {}
    for case, (batch, seq) in (("a", (3, 11)), ("b", (5, 37))):
        ids = rng.integers(5, 2000, size=(batch, seq), dtype=np.int32)
        lengths = rng.integers(seq // 2, seq + 1, size=batch)
        mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
        types = (np.arange(seq)[None, :] >= (lengths // 2)[:, None]).astype(np.int32) * mask
        out.update({f"{case}_input_ids": ids * mask, f"{case}_attention_mask": mask,
                    f"{case}_token_type_ids": types})
    return out


def keras_outputs(model, inputs, names):
    """The Keras model's outputs `names` on serving_inputs' two batches, keyed as they are."""
    out = {}
    for case in ("a", "b"):
        result = model({k: inputs[f"{case}_{k}"] for k in ("input_ids", "attention_mask",
                                                            "token_type_ids")})
        for name in names:
            out[f"{case}_{name}"] = result[name].numpy()
    return out


def squad_json(qas, version):
    """A SQuAD file's JSON with one paragraph holding `qas`."""
    return {"version": version, "data": [{"title": "t", "paragraphs": [
        {"context": "ctx", "qas": qas}]}]}


def squad_v2_sample():
    """Four v2.0 questions: two answerable (one with two gold answers), two unanswerable."""
    return squad_json([
        {"id": "a", "question": "?", "is_impossible": False,
         "answers": [{"text": "Paris", "answer_start": 0}]},
        {"id": "b", "question": "?", "is_impossible": False,
         "answers": [{"text": "in 1990", "answer_start": 0}, {"text": "1990", "answer_start": 3}]},
        {"id": "c", "question": "?", "is_impossible": True, "answers": []},
        {"id": "d", "question": "?", "is_impossible": True, "answers": []},
    ], "v2.0")


def tool_parser(module: str):
    """The ArgumentParser of `python -m albert.<module>`: its build_parser()'s."""
    import importlib

    return importlib.import_module(f"albert.{module}").build_parser()
