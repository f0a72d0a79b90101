import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import keras  # noqa: E402
import pytest  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _float32_policy():
    """Each test starts and ends under the float32 policy (mixed-precision tests change it)."""
    keras.mixed_precision.set_global_policy("float32")
    yield
    keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="session")
def sample_corpus(tmp_path_factory):
    """The bundled English corpus (CPython's help topics) in BERT's blank-line layout."""
    from albert.demo.sample import write_corpus

    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    write_corpus(str(path))
    return path


@pytest.fixture(scope="session")
def sample_vocab(sample_corpus, tmp_path_factory):
    from albert import train_tokenizer

    out = tmp_path_factory.mktemp("vocab")
    args = train_tokenizer.parse_args(["--input", str(sample_corpus), "--vocab_size", "2000",
                                       "--output_dir", str(out)])
    return train_tokenizer.train(args)


SEQ, PREDS = 64, 10


@pytest.fixture(scope="session")
def sample_records(sample_corpus, sample_vocab, tmp_path_factory):
    """Pretraining TFRecords at seq 64 / 10 predictions, 4 train shards + validation."""
    from albert import create_pretraining_data

    out = tmp_path_factory.mktemp("records")
    args = create_pretraining_data.parse_args([
        "--input", str(sample_corpus), "--spm_model", sample_vocab, "--output_dir", str(out),
        "--max_seq_length", str(SEQ), "--max_predictions_per_seq", str(PREDS),
        "--num_shards", "4", "--validation_fraction", "0.1", "--processes", "1",
        "--dupe_factor", "2", "--no_progress",
    ])
    create_pretraining_data.run(args)
    return out


def make_trainer(precision="fp32", xla=False, lr=1e-3, vocab=2000, config_overrides=None,
                 dist=None, optimizer=None, **kwargs):
    """A Trainer over a 2-layer tiny ALBERT (vocabulary 2000), seeded; optimizer(variables)
    builds another optimizer than LAMB. xla: both step functions compiled or neither, unless
    xla_gradient says otherwise for the gradient; eager=True: neither traced."""
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


@pytest.fixture(scope="session")
def batches(sample_records):
    """Six [1, 8, ...] pretraining batches (accumulation 1) from the sample records."""
    from albert.data.reader import pretraining_dataset

    ds = pretraining_dataset("train", 8, SEQ, PREDS, filesystem_prefix=str(sample_records),
                             shuffle_buffer=0).batch(1)
    return [b for b in ds.take(6)]


def run_in_process(module: str, argv) -> tuple:
    """`python -m albert.<module> argv` as main(argv) in this process: (exit status, stdout,
    stderr). For the errors a command gives, without an interpreter and TensorFlow start per
    case; an error that escapes as a traceback fails the test outright. tests/test_flags.py keeps
    one real process per runner for the exit status and the single line."""
    import contextlib
    import importlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = importlib.import_module(f"albert.{module}").main([str(a) for a in argv])
        except SystemExit as e:
            code = e.code
    return code, out.getvalue(), err.getvalue()
