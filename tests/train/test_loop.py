"""The training loop (albert.train.loop.fit) on a stand-in trainer: it stops at total_steps, logs,
evaluates and checkpoints at their frequencies (evaluations before the last update, which the run
scores once after the loop), checkpoints at the end, stops cleanly on SIGTERM, and saves the
progress made before a corrupt record stops it."""

import os
import signal
import time

import pytest
import tensorflow as tf

from albert.errors import DataError, SettingError
from albert.train.distributed import Distributed
from albert.train.evaluation import Evaluation
from albert.train.loop import DivergedError, StopSignal, fit


class FakeTrainer:
    """What fit reads of a Trainer; `skip` lists the calls whose update is skipped (an fp16
    overflow: the step does not advance), `diverge` those whose skip the trainer reports as
    divergence (not finite at loss scale 1)."""

    def __init__(self, step=0, skip=(), on_call=None, diverge=()):
        self.step, self.calls, self.skip, self.on_call = step, 0, set(skip), on_call
        self.diverge = set(diverge)
        self.dist = Distributed()
        self.loss_scale, self.grad_norm, self.skipped = 1.0, 0.5, 0

    def train_step(self, batch):
        self.calls += 1
        time.sleep(0.001)  # a measurable update: seq/s divides by the time taken
        if self.calls in self.skip:
            self.skipped += 1
        else:
            self.step += 1
        if self.on_call:
            self.on_call(self.calls)
        return {"learning_rate": 0.01, "diverged": self.calls in self.diverge}

    def pop_sums(self):
        return {"loss": 1.0}

    def weight_norm(self):
        return 2.0


class Saves(list):
    def save(self, step):
        self.append(step)


class Logs(list):
    def log(self, prefix, step, values):
        self.append((prefix, step, values))


def batches():
    while True:
        yield {"input_ids": None}


def run(trainer, total_steps=10, **kwargs):
    saves, logs = Saves(), Logs()
    kwargs = {"log_frequency": 3, "checkpoint_frequency": 4, "progress": False, **kwargs}
    outcome = fit(trainer, batches() if "data" not in kwargs else kwargs.pop("data"),
                  total_steps=total_steps, checkpoints=saves, metrics=logs,
                  metrics_fn=lambda sums: dict(sums), sequences_per_update=8, **kwargs)
    return outcome, saves, logs


def test_runs_to_total_steps_logging_evaluating_and_checkpointing_at_their_frequencies():
    evaluated, handed = [], []
    trainer = FakeTrainer()
    evaluation = Evaluation("eval", 5, lambda xla, step: evaluated.append((xla, step))
                            or {"accuracy": 0.5})
    outcome, saves, logs = run(trainer, evaluations=[evaluation], xla=True,
                               on_scores=lambda e, scores, step: handed.append((e, scores, step)))
    assert outcome == "done" and trainer.step == 10 and trainer.calls == 10
    assert saves == [4, 8, 10]  # every 4 updates and the end
    assert [(p, s) for p, s, _ in logs] == [("train", 3), ("eval", 5), ("train", 6),
                                            ("train", 9)]
    # Not at step 10, the last: the run scores the final model once, after the loop.
    assert evaluated == [(True, 5)]
    assert handed == [(evaluation, {"accuracy": 0.5}, 5)]
    assert (evaluation.step, evaluation.scores) == (5, {"accuracy": 0.5})
    train = logs[0][2]
    assert train["loss"] == 1.0 and train["learning_rate"] == 0.01
    assert train["grad_norm"] == 0.5 and train["weight_norm"] == 2.0
    assert train["skipped_updates"] == 0 and train["seq_per_sec"] > 0


def test_the_end_checkpoints_once_off_the_frequencies_and_evaluates_nothing():
    evaluation = Evaluation("val", 5, lambda xla, step: {"loss": 2.0})
    outcome, saves, logs = run(FakeTrainer(), total_steps=7, checkpoint_frequency=0,
                               evaluations=[evaluation])
    assert outcome == "done" and saves == [7]  # 0: only at the end
    assert [(p, s) for p, s, _ in logs if p == "val"] == [("val", 5)]
    assert evaluation.final(False, 7) == {"loss": 2.0} and evaluation.step == 7


def test_a_rank_that_does_not_score_logs_nothing():
    handed = []
    _, _, logs = run(FakeTrainer(), total_steps=7,
                     evaluations=[Evaluation("squad", 5, lambda xla, step: {})],
                     on_scores=lambda e, scores, step: handed.append(scores))
    assert [p for p, _, _ in logs] == ["train", "train"] and handed == [{}]


def test_a_skipped_update_is_retried_and_logs_nothing():
    trainer = FakeTrainer(skip={3})
    _, saves, logs = run(trainer, total_steps=6)
    assert trainer.step == 6 and trainer.calls == 7
    assert [s for p, s, _ in logs] == [3, 6] and logs[0][2]["skipped_updates"] == 1


def test_a_diverged_update_stops_the_run_at_once_naming_the_rate_and_saves_nothing_more():
    trainer, saves = FakeTrainer(skip={7}, diverge={7}), Saves()
    with pytest.raises(DivergedError) as raised:
        fit(trainer, batches(), total_steps=10, checkpoints=saves, metrics=Logs(),
            metrics_fn=dict, sequences_per_update=8, checkpoint_frequency=4, progress=False)
    assert trainer.calls == 7 and saves == [4]  # not retried; the diverged weights not kept
    message = str(raised.value)
    assert message.startswith("training diverged at update 7: its gradients are not finite")
    assert "(it was 0.01 at this update)" in message and "lower learning_rate" in message
    assert "with overwrite_checkpoint_dir or a new checkpoint_dir" in message
    assert "lower --learning_rate" in raised.value.on_command_line()
    assert "with --overwrite_checkpoint_dir or a new --checkpoint_dir" in \
        raised.value.on_command_line()
    assert message.endswith("the checkpoint at step 4 holds the run before it.")
    # Before any checkpoint, it says so.
    with pytest.raises(DivergedError, match="no checkpoint was saved"):
        run(FakeTrainer(skip={2}, diverge={2}))


def test_a_resumed_run_continues_from_its_step_and_a_finished_one_does_nothing():
    trainer = FakeTrainer(step=8)
    outcome, saves, logs = run(trainer)
    assert outcome == "done" and trainer.calls == 2 and saves == [10]
    trainer = FakeTrainer(step=10)
    assert run(trainer)[1:] == ([], []) and trainer.calls == 0


def test_sigterm_stops_after_the_update_and_saves_it():
    def terminate(call):
        if call == 5:
            os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.getsignal(signal.SIGTERM)
    trainer = FakeTrainer(on_call=terminate)
    outcome, saves, _ = run(trainer)
    assert outcome == "stopped" and trainer.step == 5 and saves == [4, 5]
    assert signal.getsignal(signal.SIGTERM) == previous  # the handler is put back


def test_stop_signal_only_records_the_request():
    with StopSignal() as stop:
        assert not stop.requested
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.requested


def test_data_running_out_or_corrupt_is_an_error_after_saving_the_progress():
    def five():
        for _ in range(5):
            yield {}

    with pytest.raises(DataError, match="the training data ran out before --total_steps"):
        run(FakeTrainer(), data=five())

    def corrupt():
        for _ in range(6):
            yield {}
        raise tf.errors.DataLossError(None, None, "corrupted record at 12")

    saves = Saves()
    with pytest.raises(ValueError, match="shard 3 is damaged"):
        fit(FakeTrainer(), corrupt(), total_steps=10, checkpoints=saves, metrics=Logs(),
            metrics_fn=dict, sequences_per_update=8, progress=False, checkpoint_frequency=4,
            explain_data_error=lambda e: ValueError(f"shard 3 is damaged: {e.message}"))
    assert saves == [4, 6]


def test_log_frequency_below_one_is_refused_naming_the_flag():
    with pytest.raises(SettingError, match="^log_frequency must be at least 1, got 0"):
        run(FakeTrainer(), log_frequency=0)
