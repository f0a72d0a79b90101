"""The fine-tunes that test_run_classifier.py and test_classify.py read: the four-topic task
trained once per session with the real run_classifier command (its scores, predictions, logs,
checkpoint, Hugging Face export and --export_dir SavedModel), and a JSON-lines regression
fine-tune. Both run in this process (nothing reads their process), as `python -m
albert.run_classifier argv` would, the command line their run.json records included. A test
that writes into their directories copies them first."""

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import run_in_process

from albert.demo.classification_sample import write_task

SEQ = 64  # the topic fine-tune's --max_seq_length


def run_classifier_here(argv, check=True):
    """run_classifier's main(argv) in this process: (exit status, stdout, stderr with its log
    lines); check: it succeeded."""
    code, out, err = run_in_process("run_classifier", argv)
    if check:
        assert code == 0, out[-3000:] + err[-3000:]
    return code, out, err


def read_tsv(path):
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"), strict=True)) for line in lines[1:]]


@pytest.fixture(scope="session")
def topic_task(tmp_path_factory):
    """Which of four help topics a sentence comes from (albert.demo.classification_sample):
    (its directory of train/dev/test.tsv, write_task's counts)."""
    out = tmp_path_factory.mktemp("topic")
    counts = write_task(str(out), "topic", seed=0)
    return out, counts


def training_argv(topic_dir, vocab, out, batch=32):
    """The topic fine-tune's command (also horovodrun's in test_run_classifier.py): no
    --learning_rate (a small model's), five epochs, which a 2-layer tiny model needs to learn
    the task well past the majority class."""
    return ["--train_file", str(topic_dir / "train.tsv"), "--eval_file",
            str(topic_dir / "dev.tsv"), "--test_file", str(topic_dir / "test.tsv"),
            "--model_size", "tiny", "--config_override", "num_hidden_layers=2",
            "--spm_model", vocab, "--max_seq_length", str(SEQ), "--per_gpu_batch_size",
            str(batch), "--num_train_epochs", "5", "--log_frequency", "50",
            "--output_dir", str(out / "out"), "--cache_dir", str(out / "cache"),
            "--checkpoint_dir", str(out / "ckpt"), "--log_dir", str(out / "logs"),
            "--no_progress", "--xla", "off"]  # not auto: its timing probe differs by CPU


@dataclass(frozen=True)
class FineTune:
    """A finished fine-tune: its directory, command, and what it printed."""
    root: Path
    argv: list
    stdout: str
    stderr: str

    @property
    def out(self):  # --output_dir: eval_results.json, eval_predictions.tsv, predictions.tsv
        return self.root / "out"

    @property
    def ckpt(self):  # --checkpoint_dir: run.json, checkpoints, final/ (Hugging Face export)
        return self.root / "ckpt"

    @property
    def export(self):  # --export_dir: the SavedModel
        return self.root / "serving" / "1"

    def copy(self, to):
        """The run's directories copied under `to`, and its command moved there."""
        shutil.copytree(self.root, to, dirs_exist_ok=True)
        return FineTune(Path(to), [a.replace(str(self.root), str(to)) for a in self.argv],
                        self.stdout, self.stderr)


@pytest.fixture(scope="session")
def topic_fine_tune(topic_task, sample_vocab, tmp_path_factory):
    """The four-topic classifier fine-tuned, scoring dev.tsv, predicting test.tsv and
    exporting a SavedModel with --export_dir."""
    root = tmp_path_factory.mktemp("topic_fine_tune")
    argv = training_argv(topic_task[0], sample_vocab, root)
    argv += ["--export_dir", str(root / "serving" / "1")]
    _, out, err = run_classifier_here(argv)
    return FineTune(root, argv, out, err)


@pytest.fixture(scope="session")
def regression_fine_tune(sample_vocab, tmp_path_factory):
    """A regression fine-tune on JSON-lines pairs (columns q, a; no preset, no --task at
    evaluation) that scores and predicts dev.jsonl and exports a SavedModel. Its root holds
    train.jsonl and dev.jsonl."""
    root = tmp_path_factory.mktemp("regression_fine_tune")
    rows = [{"q": f"question {i} ?", "a": f"answer {i % 3} .", "y": i % 3 * 0.5}
            for i in range(20)]
    for name, part in (("train.jsonl", rows), ("dev.jsonl", rows[:6])):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in part))
    argv = ["--train_file", str(root / "train.jsonl"), "--eval_file", str(root / "dev.jsonl"),
            "--test_file", str(root / "dev.jsonl"), "--text_a", "q", "--text_b", "a",
            "--label", "y", "--task", "regression", "--model_size", "tiny",
            "--config_override", "num_hidden_layers=1", "--spm_model", sample_vocab,
            "--max_seq_length", "32", "--per_gpu_batch_size", "4",
            "--gradient_accumulation_steps", "2", "--total_steps", "2",
            "--output_dir", str(root / "out"), "--cache_dir", str(root / "cache"),
            "--checkpoint_dir", str(root / "ckpt"), "--log_dir", str(root / "logs"),
            "--export_dir", str(root / "serving" / "1"), "--no_progress", "--xla", "off"]
    _, out, err = run_classifier_here(argv)
    return FineTune(root, argv, out, err)
