"""What every task shares (albert.tasks, its __init__): the feature cache written once by rank 0
under a name that carries the training seed, the inference function traced once per model and
XLA setting, the Task base's defaults."""

from types import SimpleNamespace

import numpy as np

from albert.tasks import Evaluation, Task, cached_features
from albert.tasks.inference import inference_fn
from albert.train.distributed import Distributed


def spec_of(tmp_path, seed=42):
    return SimpleNamespace(outputs=SimpleNamespace(cache_dir=str(tmp_path / "cache")),
                           execution=SimpleNamespace(seed=seed))


class Waiting(Distributed):
    def __init__(self, rank=0):
        self.rank, self.size, self.waited = rank, 2, 0

    def barrier(self):
        self.waited += 1


def test_features_are_written_once_and_found_again(tmp_path):
    written = []

    def write(prefix):
        written.append(prefix)
        open(prefix + ".tfrecord", "w").close()

    dist = Waiting()
    first = cached_features("/data/dev.tsv", "s128", spec_of(tmp_path), dist, write,
                            training=False)
    assert first == str(tmp_path / "cache" / "dev.tsv.s128") and written == [first]
    again = cached_features("/other/dev.tsv", "s128", spec_of(tmp_path), dist, write,
                            training=False)
    assert again == first and written == [first] and dist.waited == 2
    # Training features are shuffled by the seed: another seed is another cache.
    train = cached_features("/data/train.tsv", "s128", spec_of(tmp_path, seed=7), dist, write,
                            training=True)
    assert train.endswith("train.tsv.s128.seed7") and written[-1] == train
    # Another key (other feature settings) is another cache too.
    assert cached_features("/data/dev.tsv", "s64", spec_of(tmp_path), dist, write,
                           training=False) != first


def test_other_ranks_wait_for_rank_0s_cache_and_write_nothing(tmp_path):
    written = []
    dist = Waiting(rank=1)
    prefix = cached_features("/data/dev.tsv", "k", spec_of(tmp_path), dist, written.append,
                             training=False)
    assert prefix == str(tmp_path / "cache" / "dev.tsv.k") and written == [] and dist.waited == 1
    assert not (tmp_path / "cache").exists()


def test_inference_is_traced_once_per_model_and_xla_setting_and_picks_the_outputs():
    import tensorflow as tf

    calls = []

    class Model:
        def __call__(self, inputs, training):
            calls.append(training)
            ids = tf.cast(inputs["input_ids"], tf.float32)
            return {"start_logits": ids * 2, "end_logits": ids + 1, "other": ids}

    model = Model()
    run = inference_fn(model, False, ("end_logits", "start_logits"))
    assert inference_fn(model, False, ("end_logits", "start_logits")) is run
    assert inference_fn(model, True, ("end_logits", "start_logits")) is not run
    assert inference_fn(Model(), False, ("end_logits", "start_logits")) is not run
    inputs = {k: tf.constant([[1, 2, 3]]) for k in ("input_ids", "attention_mask",
                                                    "token_type_ids")}
    end, start = run(inputs)
    np.testing.assert_array_equal(end.numpy(), [[2, 3, 4]])
    np.testing.assert_array_equal(start.numpy(), [[2, 4, 6]])
    run({k: tf.constant([[1, 2, 3, 4, 5], [1, 1, 1, 1, 1]]) for k in inputs})  # another shape
    assert calls == [False]  # traced once, in inference mode, for every batch shape


def test_the_task_base_defaults():
    task = Task(spec=None)
    assert task.evaluations(None, None, None) == [] and task.setup(None, None) == {}
    assert task.training_examples() is None and task.baseline({}) is None
    assert task.headline("eval", {"f1": 0.5, "loss": 2, "note": "x"}) == "f1 0.5000 loss 2.0000"
    evaluation = Evaluation("eval", 0, lambda xla, step: {})
    assert (evaluation.prefix, evaluation.frequency) == ("eval", 0)


def test_the_learned_nothing_warning_never_calls_the_usual_rate_too_low():
    """Issue 50 item 17: the quick demo (LAMB 0.01 over 30 updates) was told its rate was "too
    low" beside advice to pretrain at about 0.01. The warning names the rate beside the usual
    ones, the updates first, and calls it neither low nor high."""
    from albert.tasks import learned_nothing_warning
    from albert.tasks.pretraining import PretrainingTask

    spec = SimpleNamespace(optimization=SimpleNamespace(learning_rate=0.01))
    warning = learned_nothing_warning(spec, 30, PretrainingTask.usual_rates)
    assert warning == (
        "WARNING: the model learned nothing: its scores are the baseline's. Likely causes: too "
        "few updates (30), or a --learning_rate that does not suit this model's size (0.01 here; "
        f"{PretrainingTask.usual_rates})")
    assert "about 0.01" in warning and "too low" not in warning and "too high" not in warning


def test_a_model_no_longer_used_is_freed_with_its_inference_functions():
    """The traced functions live on the model: a run that evaluates model after model (keep-best,
    in-run evaluations of each checkpoint) does not keep every one of them alive."""
    import gc
    import weakref

    import tensorflow as tf

    class Model:
        def __call__(self, inputs, training):
            return {"logits": tf.cast(inputs["input_ids"], tf.float32)}

    model = Model()
    run = inference_fn(model, False, ("logits",))
    run({k: tf.constant([[1, 2]]) for k in ("input_ids", "attention_mask", "token_type_ids")})
    gone = weakref.ref(model)
    del model, run
    gc.collect()
    assert gone() is None
