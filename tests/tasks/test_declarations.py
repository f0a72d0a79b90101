"""What each task says once (albert.tasks.Task): its synthetic batch holds exactly the features its
loss reads, the training metrics it logs are the ones its metrics make, its memory-plan head counts
the parameters of the model it builds, and its export kind serves that model."""

import math

import pytest
import tensorflow as tf

from albert.eval.squad_scoring import evaluate
from albert.io.savedmodel import model_class as export_class
from albert.model.config import PRESETS, AlbertConfig
from albert.model.heads import TASKS, task_name
from albert.tasks import LOOP_LOGGED
from albert.tasks.classification import ClassifierTask
from albert.tasks.classifier_options import ClassifierOptions
from albert.tasks.pretraining import PretrainingTask
from albert.tasks.pretraining_options import TRAINING_METRICS as PRETRAINING_TRAINED
from albert.tasks.pretraining_options import PretrainingOptions
from albert.tasks.squad import SquadTask
from albert.tasks.squad_options import SquadOptions
from albert.train.auto_batch import choose_auto_batch
from albert.train.distributed import Distributed
from albert.train.memory_plan import HEADS, parameter_count
from albert.train.run_spec import Batching, RunSpec

SEQ, VOCAB = 16, 100


def make(kind):
    if kind == "pretraining":
        return PretrainingTask(RunSpec(task="pretraining", options=PretrainingOptions(
            max_seq_length=SEQ, max_predictions_per_seq=5)))
    if kind == "squad":
        return SquadTask(RunSpec(task="squad", options=SquadOptions(max_seq_length=SEQ)))
    labels = ("a", "b", "c") if kind == "classification" else None
    # The task and labels as the runner's fold leaves them in the spec.
    return ClassifierTask(RunSpec(task=kind, options=ClassifierOptions(
        max_seq_length=SEQ, kind=kind, labels=labels)))


def model_of(task):
    config = AlbertConfig(vocab_size=VOCAB, **PRESETS["tiny"])
    return task.model_class()(config, **task.model_options()).build_for_config()


KINDS = ("pretraining", "squad", "classification", "regression")


@pytest.mark.parametrize("kind", KINDS)
def test_the_synthetic_batch_holds_exactly_what_the_loss_reads(kind):
    task = make(kind)
    model = model_of(task)
    batch = task.synthetic_batch(3, SEQ, VOCAB)
    assert batch["input_ids"].shape == (3, SEQ)
    assert int(tf.reduce_min(batch["input_ids"])) >= 5  # no special piece
    loss, sums = task.loss_fn(model, batch, training=True)
    assert math.isfinite(float(loss))
    # Every feature is read: the loss fails without any one of them.
    for key in batch:
        with pytest.raises(KeyError):
            task.loss_fn(model, {k: v for k, v in batch.items() if k != key}, training=False)
    # The training line's metrics are the ones the task declares it logs (regression: its loss).
    metrics = task.metrics_fn({k: float(v) for k, v in sums.items()})
    declared = [m for m in task.logged["train"] if m not in LOOP_LOGGED]
    if kind == "regression":
        assert set(metrics) < set(declared)
    else:
        assert list(metrics) == declared
    if kind == "pretraining":
        assert list(metrics) == list(task.logged["val"])  # validation: the same metrics
        assert task.synthetic_batch(2, SEQ, VOCAB)["masked_lm_positions"].shape == (2, 5)
        assert task.synthetic_batch(2, 4, VOCAB)["masked_lm_positions"].shape == (2, 3)


@pytest.mark.parametrize("kind", KINDS)
def test_the_memory_plan_head_counts_the_model_the_task_builds(kind):
    task = make(kind)
    model = model_of(task)
    built = sum(int(tf.size(v)) for v in model.trainable_variables)
    assert parameter_count(model.config, task.name, task.num_labels) == built


@pytest.mark.parametrize("kind", KINDS)
def test_the_export_kind_serves_the_model_the_task_trains(kind):
    task = make(kind)
    if kind == "pretraining":
        assert task.export_task is None  # a pretraining run writes no SavedModel
        return
    assert export_class(task.export_task) is task.model_class()
    # One spelling: the export kind, the memory plan's head and the spec's task are its name,
    # whose metrics are the table's (a regression is a classification whose options say so).
    assert task.export_task == task.name == type(task).name == task_name(kind)
    assert task.name in HEADS and TASKS[task.name].model == task.model_class().__name__
    assert TASKS[task.name].reported == task.reported
    assert TASKS[task.name].trained == tuple(m for m in task.logged["train"]
                                             if m not in LOOP_LOGGED)


def test_every_task_has_one_name_and_the_table_says_what_pretraining_logs():
    assert sorted(TASKS) == sorted(t.name for t in (PretrainingTask, SquadTask, ClassifierTask))
    assert not isinstance(vars(ClassifierTask).get("name"), property)
    assert TASKS["pretraining"].trained == PRETRAINING_TRAINED == PretrainingTask.logged["val"]
    assert task_name("qa") == "squad" and task_name("regression") == "classification"


def test_the_squad_scores_declared_logged_are_the_ones_the_official_scoring_makes():
    """The launcher reads a metric per declared name from run_squad's eval/ lines and from
    pretraining's squad/ ones (SQuAD during pretraining logs the scores of a run_squad child):
    each name is a score the scoring makes of a v1.1 or a v2.0 file, and every score it makes
    is declared (counts and no-answer thresholds are not scores)."""
    context = "mira owns the red boat."
    v1 = {"version": "1.1", "data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "a", "question": "who owns it?", "answers": [{"text": "mira",
                                                             "answer_start": 0}]}]}]}]}
    v2 = {"version": "v2.0", "data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "a", "question": "who owns it?", "is_impossible": False,
         "answers": [{"text": "mira", "answer_start": 0}]},
        {"id": "b", "question": "who sold it?", "is_impossible": True, "answers": []}]}]}]}
    made = {**evaluate(v1, {"a": "mira"}),
            **evaluate(v2, {"a": "mira", "b": "boat"}, na_probs={"a": 0.1, "b": 0.9})}
    scores = {name for name in made
              if not name.endswith(("total", "_thresh")) and name != "missing_predictions"}
    assert sorted(SquadTask.logged["eval"]) == sorted(scores)
    assert PretrainingTask.logged["squad"] == SquadTask.logged["eval"]
    # The values are scores, not counts: the v2.0 file's answered question right, its
    # unanswerable one wrong unless the no-answer threshold drops the answer (best_*).
    assert (made["exact_match"], made["HasAns_f1"], made["NoAns_f1"]) == (100.0, 100.0, 0.0)
    assert (made["f1"], made["best_f1"]) == (50.0, 100.0)


@pytest.mark.parametrize("kind", KINDS)
def test_auto_batch_trial_steps_run_on_the_tasks_synthetic_batch(kind):
    """--per_gpu_batch_size auto's trial path (real steps of the loss on the task's batches; on
    this CPU none runs out of memory, so the largest divisor is chosen)."""
    task = make(kind)
    model = model_of(task)
    seen = []

    def synthetic_batch(micro_batch, seq_length, vocab_size):
        seen.append((micro_batch, seq_length, vocab_size))
        return task.synthetic_batch(micro_batch, seq_length, vocab_size)

    spec = RunSpec(task=task.spec.task, options=task.spec.options,
                   batching=Batching(per_gpu_batch_size="auto", global_batch_size=4))
    batching, line = choose_auto_batch(
        spec, model, Distributed(), synthetic_batch=synthetic_batch, loss_fn=task.loss_fn,
        head=task.name, num_labels=task.num_labels, xla_gradient=False, on_gpu=True)
    assert (batching.per_gpu_batch_size, batching.gradient_accumulation_steps) == (4, 1)
    # Full-length batches of the model's vocabulary; the last, 4 sequences and a 10% margin.
    assert {(s, v) for _, s, v in seen} == {(SEQ, VOCAB)} and seen[-1][0] == 5
    assert "ran on this GPU" in line


@pytest.mark.parametrize("kind, published", [("squad", 3e-5), ("classification", 2e-5)])
def test_a_fine_tune_left_without_a_rate_takes_one_for_its_models_size(kind, published):
    """A base or larger model takes its task's published rate; a model of the tiny preset's
    width a small model's (the published ones left it where it started: albert.tasks)."""
    from albert.run_classifier import build_parser as classifier_parser
    from albert.run_squad import build_parser as squad_parser
    from albert.tasks import SMALL_MODEL_LEARNING_RATE

    task = make(kind)
    for size in ("base", "large", "xxlarge"):
        assert task.default_learning_rate(AlbertConfig.from_preset(size))[0] == published
    rate, why = task.default_learning_rate(AlbertConfig.from_preset("tiny"))
    assert rate == SMALL_MODEL_LEARNING_RATE == 5e-4
    assert "hidden size 128 <= 256" in why
    widened = AlbertConfig.from_preset("tiny", hidden_size=512, num_attention_heads=8)
    assert task.default_learning_rate(widened)[0] == published
    # The flag is left unset for the run to settle, and its help says how.
    parser = (squad_parser if kind == "squad" else classifier_parser)()
    assert parser.parse_args([]).learning_rate is None
    assert f"else {published:g}, the published rate" in " ".join(parser.format_help().split())
