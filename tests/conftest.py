import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import pytest  # noqa: E402
from helpers import PREDS, SEQ  # noqa: E402

# The trained models several test files read, one session fixture each (built once per test
# process; SHARED_FIXTURE_GROUPS below keeps their readers in one process).
pytest_plugins = ["trained_squad", "trained_classifier"]

# How two test processes (scripts/test.sh: pytest-xdist, --dist loadgroup) share the work: a
# group is given to one process whole, so a module's or a group's fixtures are built once; each
# file is its own group but for the files that share a session fixture's trained model, grouped
# under the name of the module that holds the fixture (tests/trained_*.py).
SHARED_FIXTURE_GROUPS = {
    "trained_squad": ("tests/test_run_squad.py", "tests/test_answer.py",
                      "tests/test_export.py", "tests/scripts/test_cloud.py"),
    "trained_classifier": ("tests/test_run_classifier.py", "tests/test_classify.py"),
}
# The groups are handed out in collection order (scripts/test.sh turns off xdist's reordering by
# test count, which put the demo's few slow tests last): the longest first, so that both
# processes finish together instead of one waiting on the demo at the end. Roughly longest
# first by measured test time per group (--durations); the rest keep pytest's order after them.
LONGEST_FIRST = (
    "tests/test_run_pretraining.py", "trained_squad", "tests/scripts/test_demo.py",
    "tests/train/test_trainer.py", "trained_classifier", "tests/scripts/test_benchmark.py",
    "tests/model/test_modeling.py", "tests/scripts/test_scripts.py",
    "tests/scripts/test_front_page.py", "tests/train/test_checkpoint_store.py",
    "tests/test_interrupted_runs.py", "tests/train/test_optimization.py",
    "tests/train/test_run_spec.py", "tests/train/test_xla_plan.py",
)


def group_of(path: str) -> str:
    """The group of the test file at `path` (relative to the repository): its shared fixture's
    name, or the path itself."""
    return next((name for name, files in SHARED_FIXTURE_GROUPS.items() if path in files), path)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    order = {group: i for i, group in enumerate(LONGEST_FIRST)}
    groups = {}
    for item in items:
        groups[item] = group_of(item.nodeid.split("::", 1)[0])
        item.add_marker(pytest.mark.xdist_group(groups[item]))
    # A stable sort: the files of a group next to each other, each file's tests in its order.
    first_seen = {}
    for item in items:
        first_seen.setdefault(groups[item], len(first_seen))
    items.sort(key=lambda item: (order.get(groups[item], len(order)), first_seen[groups[item]]))


@pytest.fixture(autouse=True)
def _float32_policy():
    """Each test starts and ends under the float32 policy (mixed-precision tests change it)."""
    import keras  # here, not at the top: xdist's controlling process runs no test

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


@pytest.fixture(scope="session")
def batches(sample_records):
    """Six [1, 8, ...] pretraining batches (accumulation 1) from the sample records."""
    from albert.data.reader import pretraining_dataset

    ds = pretraining_dataset("train", 8, SEQ, PREDS, filesystem_prefix=str(sample_records),
                             shuffle_buffer=0).batch(1)
    return [b for b in ds.take(6)]


