import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import keras  # noqa: E402
import pytest  # noqa: E402
from helpers import PREDS, SEQ  # noqa: E402


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


