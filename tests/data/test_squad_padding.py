"""SQuAD windows padded to their batch (issue 26): the feature cache keeps each window's real
length; prediction batches windows of one length bucket and gives the predictions of fixed
padding; training updates share a bucketed length, stay seeded and shuffled across lengths, and
resume exactly from a saved iterator or by replaying the stream."""

import numpy as np
import pytest
import tensorflow as tf

from albert.data import squad
from albert.data.squad_records import (
    feature_dataset,
    prediction_batches,
    training_batches,
    write_feature_cache,
)
from albert.data.tokenization import load_tokenizer
from albert.demo.squad_sample import write_sample

SEQ, BUCKET = 192, 32
SETTINGS = squad.FeatureSettings(SEQ, 64, 32)


@pytest.fixture(scope="module")
def cache(sample_vocab, tmp_path_factory):
    """Dev (prediction) and train caches of the bundled sample at seq 192: window lengths from
    about 40 to 192, so most length buckets of 32 are used."""
    out = tmp_path_factory.mktemp("padding")
    train, dev = write_sample(str(out / "data"), "v2.0", train_questions=300, dev_questions=60,
                              seed=4)
    tokenizer = load_tokenizer(sample_vocab)
    prefixes = {}
    for name, path, training in (("dev", dev, False), ("train", train, True)):
        examples, _, _ = squad.read_squad(path)
        features = squad.featurize(examples, tokenizer, SETTINGS, training)
        prefix = str(out / name)
        write_feature_cache(features, prefix)
        prefixes[name] = (examples, features, prefix)
    return prefixes


def test_cache_keeps_each_windows_real_length(cache):
    examples, features, prefix = cache["dev"]
    lengths = [f.length for f in features]
    assert len({squad.padded_length(n, SEQ, BUCKET) for n in lengths}) >= 4  # several buckets
    assert [m["length"] for m in squad.read_feature_meta(prefix)] == lengths
    records, parse = feature_dataset(prefix, SEQ)  # padding "max": as before
    full = parse(next(iter(records.batch(len(features)))))
    assert full["input_ids"].shape == (len(features), SEQ)
    assert full["input_ids"].numpy().tolist() == [f.input_ids for f in features]
    assert full["attention_mask"].numpy().tolist() == [f.attention_mask for f in features]
    assert full["token_type_ids"].numpy().tolist() == [f.token_type_ids for f in features]
    # Batch padding: the batch's longest, rounded up to the bucket; the same values before it.
    records, parse = feature_dataset(prefix, SEQ, "batch", BUCKET)
    batch = parse(next(iter(records.batch(5))))
    width = squad.padded_length(max(lengths[:5]), SEQ, BUCKET)
    assert batch["input_ids"].shape == (5, width)
    assert batch["input_ids"].numpy().tolist() == [f.input_ids[:width] for f in features[:5]]
    # A cache of the old layout is never read: its key changes with the layout.
    assert squad.CACHE_VERSION != "1"


@pytest.mark.parametrize("size", [1, 2])
def test_prediction_batches_every_window_once_in_bucketed_shapes(cache, size):
    _, features, prefix = cache["dev"]
    lengths = [f.length for f in features]
    seen = []
    for rank in range(size):
        shapes = set()
        batches = list(prediction_batches(prefix, 8, SEQ, "batch", BUCKET, rank, size))
        for batch in batches:
            index = batch["feature_index"].numpy()
            width = batch["input_ids"].shape[1]
            shapes.add(width)
            assert width % BUCKET == 0 or width == SEQ
            # One bucket per batch: every window in it is padded to its own bucket.
            assert {squad.padded_length(lengths[i], SEQ, BUCKET) for i in index} == {width}
            assert (batch["attention_mask"].numpy().sum(1) == [lengths[i] for i in index]).all()
            seen.extend(index.tolist())
        assert len(shapes) <= -(-SEQ // BUCKET)
        # The batches are plan_batches' (which albert.answer uses), in feature-index terms.
        shard = list(range(rank, len(features), size))
        plan = squad.plan_batches([lengths[i] for i in shard], 8, SEQ, "batch", BUCKET)
        assert [[shard[i] for i in idx] for idx, _ in plan] == [
            b["feature_index"].numpy().tolist() for b in batches]
    assert sorted(seen) == list(range(len(features)))
    # padding "max": consecutive windows at max_seq_length, as run_squad always batched.
    batches = list(prediction_batches(prefix, 8, SEQ, "max", BUCKET))
    assert {b["input_ids"].shape[1] for b in batches} == {SEQ}
    assert np.concatenate([b["feature_index"] for b in batches]).tolist() == list(
        range(len(features)))


def test_predictions_equal_between_paddings(cache):
    """A tiny model's logits over each window's real tokens, and the answers, null odds and
    n-best read from them, are those of fixed padding."""
    from albert.model.config import AlbertConfig
    from albert.model.modeling import AlbertForQuestionAnswering

    examples, features, prefix = cache["dev"]
    config = AlbertConfig.from_preset("tiny", vocab_size=2000, max_position_embeddings=SEQ)
    tf.keras.utils.set_random_seed(3)
    model = AlbertForQuestionAnswering(config).build_for_config()

    def predict(padding):
        results, widths = {}, set()
        for batch in prediction_batches(prefix, 16, SEQ, padding, BUCKET):
            out = model({k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")})
            widths.add(batch["input_ids"].shape[1])
            results.update(squad.real_logits(batch["feature_index"], batch["attention_mask"],
                                             out["start_logits"], out["end_logits"]))
        return results, widths

    fixed, fixed_widths = predict("max")
    bucketed, widths = predict("batch")
    assert fixed_widths == {SEQ} and len(widths) >= 3
    assert sorted(fixed) == sorted(bucketed) == list(range(len(features)))
    for fi in fixed:
        assert len(fixed[fi][0]) == features[fi].length
        np.testing.assert_allclose(fixed[fi][0], bucketed[fi][0], atol=1e-5)
        np.testing.assert_allclose(fixed[fi][1], bucketed[fi][1], atol=1e-5)
    meta = squad.read_feature_meta(prefix)
    a = squad.postprocess(examples, meta, fixed, version_2=True)
    b = squad.postprocess(examples, meta, bucketed, version_2=True)
    assert a[0] == b[0] and len(set(a[0].values())) > 3
    assert a[2] == pytest.approx(b[2], abs=1e-4)
    assert [[c["text"] for c in n] for n in a[1].values()] == [
        [c["text"] for c in n] for n in b[1].values()]
    # However much padding the results keep (run_squad kept each batch's longest), the answers
    # are those of the real tokens: padding never takes an n-best place.
    padded = {fi: (np.pad(s, (0, 7), constant_values=99.0), np.pad(e, (0, 7),
                                                                     constant_values=99.0))
              for fi, (s, e) in fixed.items()}
    assert squad.postprocess(examples, meta, padded, version_2=True)[0] == a[0]


# -- training ---------------------------------------------------------------------------------


def take(dataset, n):
    return [{k: v.numpy() for k, v in batch.items()} for batch in dataset.take(n)]


def same(a, b):
    return len(a) == len(b) and all(
        x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)
        for x, y in zip(a, b, strict=True))


def updates(prefix, n, **kw):
    args = {"micro_batch": 4, "accumulation": 2, "max_seq_length": SEQ, "seed": 7,
            "bucket": BUCKET, "window": 4, **kw}
    return take(training_batches(prefix, **args), n)


def test_training_updates_share_a_bucketed_length_in_shuffled_order(cache):
    _, features, prefix = cache["train"]
    lengths = [f.length for f in features]
    got = updates(prefix, 24)
    widths = []
    for u in got:
        assert u["input_ids"].shape[:2] == (2, 4)
        width = u["input_ids"].shape[2]
        assert width % BUCKET == 0 or width == SEQ
        for k in ("attention_mask", "token_type_ids"):
            assert u[k].shape == (2, 4, width)
        for k in ("start_positions", "end_positions", "feature_index"):
            assert u[k].shape == (2, 4)
        index = u["feature_index"].reshape(-1)
        assert squad.padded_length(max(lengths[i] for i in index), SEQ, BUCKET) == width
        # The windows themselves, unchanged: their tokens, then padding.
        for i, row in zip(index, u["input_ids"].reshape(8, width), strict=True):
            assert row.tolist() == features[i].input_ids[:width]
        widths.append(width)
    # Updates of several lengths, interleaved: not sorted by length (in either direction).
    assert len(set(widths)) >= 3
    assert widths != sorted(widths) and widths != sorted(widths, reverse=True)
    # Deterministic for a seed, another seed another order.
    assert same(got, updates(prefix, 24))
    assert not same(got, updates(prefix, 24, seed=8))
    # Less padding than fixed padding.
    assert np.mean(widths) < SEQ


def test_training_updates_use_the_stream_records_once(cache):
    """The bucketed updates of one window of the stream hold exactly the records fixed padding
    would have used in those updates: the same stream, regrouped."""
    _, _, prefix = cache["train"]
    fixed = updates(prefix, 16, padding="max")
    bucketed = updates(prefix, 16)
    for start in (0, 4, 8, 12):  # window=4 updates
        def ids(us):
            return sorted(np.concatenate([u["feature_index"].ravel() for u in us]).tolist())
        assert ids(fixed[start:start + 4]) == ids(bucketed[start:start + 4])


def test_max_padding_is_the_pipeline_run_squad_built(cache):
    """padding="max": today's make_data (shard, shuffle(seed), repeat, skip, batch(micro), parse,
    batch(accumulation)) record for record, every window padded to max_seq_length."""
    _, features, prefix = cache["train"]
    for rank, size, skip in ((0, 1, 0), (1, 2, 6)):
        got = updates(prefix, 6, padding="max", rank=rank, size=size, skip_records=skip)
        stream = (tf.data.TFRecordDataset(prefix + ".tfrecord").shard(size, rank)
                  .shuffle(10_000, seed=7, reshuffle_each_iteration=True).repeat().skip(skip)
                  .map(lambda r: tf.io.parse_single_example(
                      r, {"feature_index": tf.io.FixedLenFeature([], tf.int64)})
                      ["feature_index"]))
        order = [int(i) for i in stream.take(6 * 8)]
        assert all(i % size == rank for i in order)
        for u, first in zip(got, range(0, 48, 8), strict=True):
            index = order[first:first + 8]
            assert u["feature_index"].tolist() == np.reshape(index, (2, 4)).tolist()
            assert u["input_ids"].shape == (2, 4, SEQ)
            for name in ("input_ids", "attention_mask", "token_type_ids"):
                assert u[name].reshape(8, SEQ).tolist() == [getattr(features[i], name)
                                                            for i in index]
            assert u["start_positions"].reshape(-1).tolist() == [
                features[i].start_position for i in index]


@pytest.mark.parametrize("padding", ["batch", "max"])
def test_saved_iterator_and_replay_continue_exactly(cache, padding, tmp_path):
    """Five updates in, the iterator is saved; a new pipeline restored from it, and one that
    skips the records of those five updates, both give the straight run's next updates."""
    _, _, prefix = cache["train"]
    args = {"micro_batch": 4, "accumulation": 2, "max_seq_length": SEQ, "seed": 7,
            "bucket": BUCKET, "window": 4, "padding": padding}
    straight = take(training_batches(prefix, **args), 12)
    it = iter(training_batches(prefix, **args))
    for _ in range(5):
        next(it)
    path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "input"))
    restored = iter(training_batches(prefix, **args))
    tf.train.Checkpoint(iterator=restored).read(path).assert_consumed()
    after = [{k: v.numpy() for k, v in next(restored).items()} for _ in range(7)]
    assert same(after, straight[5:])
    replayed = take(training_batches(prefix, **args, skip_records=5 * 8), 7)
    assert same(replayed, straight[5:])


@pytest.mark.parametrize("padding", ["batch", "max"])
def test_training_and_prediction_start_no_autotuning_thread(cache, padding):
    """Deleting an iterator waits for tf.data's autotuning thread, which can sleep up to a
    minute: a fine-tune stalled that long as its training stream went, in 5 of 20 runs."""
    _, _, train = cache["train"]
    _, _, dev = cache["dev"]
    stream = training_batches(train, 4, 2, SEQ, seed=7, padding=padding, bucket=BUCKET,
                                    window=4)
    batches = prediction_batches(dev, 8, SEQ, padding, BUCKET)
    for ds in (stream, batches):
        assert ds.options().autotune.enabled is False


# -- the measurement ----------------------------------------------------------------------------


@pytest.mark.slow
def test_benchmark_reports_padding_and_both_rates(sample_vocab):
    """scripts/benchmark.py --squad_padding, small: its keys, and padding shares that follow
    from the batches (speed itself is not asserted)."""
    import importlib.util
    import os

    from helpers import REPO_ROOT

    spec = importlib.util.spec_from_file_location(
        "benchmark", os.path.join(REPO_ROOT, "scripts", "benchmark.py"))
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    args = benchmark.parse_args([
        "--no_step", "--squad_padding", "--model_size", "tiny", "--max_seq_length", "192",
        "--per_gpu_batch_size", "2", "--gradient_accumulation_steps", "2", "--steps", "2",
        "--repeats", "1", "--warmup", "1", "--squad_questions", "12", "--xla", "off",
        "--spm_model", sample_vocab])
    result = benchmark.bench_squad_padding(args)
    share = result["squad_padding_share"]
    assert 0 < share["batch"]["predict"] < share["max"]["predict"] < 1
    assert 0 <= share["batch"]["finetune"] < 1 and 0 < share["max"]["finetune"] < 1
    assert all(w % 64 == 0 or w == 192 for w in result["squad_widths"]["predict"])
    assert sum(result["squad_widths"]["finetune"].values()) == 2
    for what in ("predict", "finetune"):
        rates = result[f"squad_{what}_seq_per_sec"]
        assert set(rates) == {"max", "batch"} and min(rates.values()) > 0
        assert result[f"squad_{what}_speedup"] == pytest.approx(rates["batch"] / rates["max"])
    assert result["squad_xla"]["gradient"] is False
