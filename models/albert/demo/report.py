"""What the demo's runs show, read back from the files they wrote: scripts/demo.sh's last step.

    python -m albert.demo.report --demo_dir demo_output --seeds 1 2

Reads the pretraining's logs and baselines and every fine-tune under <demo_dir>/finetune/ (all
the training questions, seeds --seeds) and, once `scripts/demo.sh few_labels` has run,
<demo_dir>/finetune_tenth/ (a tenth of them, every seed both starts ran), each named
<start>-seed<N> with start pretrained or scratch. Prints the pretraining's held-out accuracies
against their baselines, one row per seed with both starts' dev F1, the mean difference against
the seeds' spread and a verdict (Comparison.verdict) that says "helped" only when every run
learned to answer, the difference is larger than the spread and every seed gained; then both
starts' answers to the same dev questions (the first ones of the dev file, a fixed rule, not a
choice), and draws the pictures into <demo_dir>/pretraining_pays.png.
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass

from albert.cli import flags
from albert.errors import AlbertError, FlagError
from albert.tasks.squad_options import AT_EMPTY, against_empty_answers

STARTS = ("pretrained", "scratch")
PICTURE = "pretraining_pays.png"


@dataclass(frozen=True)
class FineTune:
    start: str
    seed: int
    results: dict    # eval_results.json: the official scores of the final model
    curve: list      # (update, dev F1) of each evaluation during the run
    predictions: dict


def _read_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _records(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def seeds_run(directory: str) -> list[int]:
    """The seeds both starts ran under `directory` (<start>-seed<N>)."""
    names = set(os.listdir(directory))
    found = [{int(n[len(f"{start}-seed"):]) for n in names
              if n.startswith(f"{start}-seed") and n[len(f"{start}-seed"):].isdigit()
              and os.path.isdir(os.path.join(directory, n))} for start in STARTS]
    return sorted(set.intersection(*found))


def read_fine_tunes(directory: str, seeds: list[int]) -> dict[tuple[str, int], FineTune]:
    runs = {}
    for start in STARTS:
        for seed in seeds:
            run = os.path.join(directory, f"{start}-seed{seed}")
            evals = [r for r in _records(os.path.join(run, "logs", "metrics.jsonl"))
                     if r["split"] == "eval"]
            runs[start, seed] = FineTune(
                start, seed, _read_json(os.path.join(run, "eval_results.json")),
                [(r["step"], r["f1"]) for r in evals],
                _read_json(os.path.join(run, "predictions.json")))
    return runs


def empty_answer_f1(results: dict) -> float:
    """The F1 of answering nothing: the dev set's unanswerable share."""
    return 100.0 * results.get("NoAns_total", 0) / results["total"]


def standing(results: dict) -> str | None:
    """Where a fine-tune's official scores stand against the all-empty answers: the run
    summary's rule (tasks.squad_options.against_empty_answers), so that the two never disagree."""
    return against_empty_answers(results["f1"], results.get("HasAns_f1", results["f1"]),
                                 empty_answer_f1(results), results["total"])


@dataclass(frozen=True)
class Comparison:
    """Both starts' dev F1 over the same seeds. `questions`: the dev questions, whose one
    question's worth of F1 (100 / questions) is the least noise a difference is measured
    against (see `bar`). `unlearned`: the runs that did not learn to answer (standing), as
    "from <start> (seed N) ...", which rule out any verdict."""
    seeds: list[int]
    pretrained: list[float]
    scratch: list[float]
    questions: int = 0
    unlearned: tuple[str, ...] = ()

    @property
    def differences(self) -> list[float]:
        return [p - s for p, s in zip(self.pretrained, self.scratch, strict=True)]

    @property
    def gain(self) -> float:
        return sum(self.differences) / len(self.differences)

    @property
    def spread(self) -> float:
        """The seed noise: the larger of the two starts' ranges of dev F1 over the seeds."""
        return max(max(v) - min(v) for v in (self.pretrained, self.scratch))

    @property
    def floor(self) -> float:
        """One question's worth of F1: a difference that one answer can make."""
        return 100 / self.questions if self.questions else 0.0

    @property
    def bar(self) -> float:
        """What a mean difference must exceed to be more than noise: the seeds' spread, but
        never less than one question's worth of F1. Two or three seeds that land within one
        question of each other (a spread of 0.00 is common on a small dev set) are no evidence
        that the noise is smaller than that: they measured too little of it."""
        return max(self.spread, self.floor)

    def _against(self) -> str:
        """The bar, in words: the spread, and when the floor stands in for it, why."""
        said = f"the seeds' spread of {self.spread:.2f} F1"
        if self.spread < self.floor:
            said += (f" (less than one question's worth, {self.floor:.2f} F1 of "
                     f"{self.questions}: seeds that agree that closely are no evidence of no "
                     "noise, so one question's worth is the bar)")
        return said

    def verdict(self) -> str:
        """One of: one seed (no spread, no verdict); "cannot tell" when a run learned nothing
        or scored below the all-empty answers, or when the mean difference is within the bar
        (either sign), or beyond it against a seed that went the other way; "pretraining
        helped" when the mean gain is beyond the bar and every seed gained; "not shown" when
        it is beyond the bar but a seed did not gain (which one is said); "pretraining did
        not help here" when the mean is a loss beyond the bar and every seed lost."""
        gain, differences = self.gain, self.differences
        if len(set(self.seeds)) < 2:
            return (f"one seed ({gain:+.2f} F1) shows no spread: run at least two seeds "
                    "before reading a difference")
        if self.unlearned:
            more = f" (and {len(self.unlearned) - 1} more)" if len(self.unlearned) > 1 else ""
            return (f"cannot tell: the fine-tune {self.unlearned[0]}{more}: a start that did "
                    "not learn to answer under these settings says nothing of what "
                    "pretraining is worth")
        if abs(gain) <= self.bar:
            return (f"cannot tell: {gain:+.2f} F1 on average is within {self._against()}: "
                    "this run cannot tell a difference from noise")
        by_seed = list(zip(self.seeds, differences, strict=True))
        if gain > 0:
            lost = [(seed, d) for seed, d in by_seed if d <= 0]
            if not lost:
                return (f"pretraining helped: {gain:+.2f} F1 on average (worst seed "
                        f"{min(differences):+.2f}), more than {self._against()}")
            which = ", ".join(f"seed {seed} {d:+.2f} F1" for seed, d in lost)
            return (f"not shown: {gain:+.2f} F1 on average is more than {self._against()}, "
                    f"but not every seed gained ({which}): a gain that a seed does not show "
                    "is not shown")
        won = [(seed, d) for seed, d in by_seed if d >= 0]
        if not won:
            return (f"pretraining did not help here: {gain:+.2f} F1 on average (best seed "
                    f"{max(differences):+.2f}), beyond {self._against()}")
        which = ", ".join(f"seed {seed} {d:+.2f} F1" for seed, d in won)
        return (f"cannot tell: {gain:+.2f} F1 on average is beyond {self._against()}, but not "
                f"every seed lost ({which})")


def unlearned(runs: dict, seeds: list[int]) -> tuple[str, ...]:
    """The runs (of these seeds) at or below the all-empty answers, in words."""
    found = []
    for start in STARTS:
        for seed in seeds:
            where = standing(runs[start, seed].results)
            if where:
                found.append(f"from {start} (seed {seed}) "
                             + ("learned nothing" if where == AT_EMPTY else
                                "scored below answering nothing"))
    return tuple(found)


def compare(runs: dict, seeds: list[int]) -> Comparison:
    return Comparison(seeds, [runs["pretrained", s].results["f1"] for s in seeds],
                      [runs["scratch", s].results["f1"] for s in seeds],
                      runs["pretrained", seeds[0]].results["total"], unlearned(runs, seeds))


def print_comparison(title: str, runs: dict, seeds: list[int]) -> Comparison:
    first = runs["pretrained", seeds[0]].results
    print(f"=== {title}: {first['total']} dev questions, official SQuAD v2.0 scoring; both "
          "starts with the same flags, seeds and updates ===")
    print(f"{'seed':<6}{'from pretrained':>17}{'from scratch':>14}{'difference':>12}")
    for seed in seeds:
        p, s = runs["pretrained", seed].results["f1"], runs["scratch", seed].results["f1"]
        print(f"{seed:<6}{p:>17.2f}{s:>14.2f}{p - s:>+12.2f}")
    comparison = compare(runs, seeds)
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    print(f"{'mean':<6}{mean(comparison.pretrained):>17.2f}{mean(comparison.scratch):>14.2f}"
          f"{comparison.gain:>+12.2f}   (seeds' spread {comparison.spread:.2f} F1)")
    print(f"all-empty answers {empty_answer_f1(first):.2f} F1")
    for (start, seed), run in sorted(runs.items()):
        where = standing(run.results)
        if where == AT_EMPTY:
            print(f"warning: the fine-tune from {start} (seed {seed}) learned nothing: F1 "
                  f"{run.results['f1']:.2f} is the all-empty baseline's, its answerable questions "
                  "no better than noise (too few updates, or a learning rate that does not suit "
                  "this start)")
        elif where:
            print(f"warning: the fine-tune from {start} (seed {seed}) scored below answering "
                  f"nothing: F1 {run.results['f1']:.2f} against the all-empty answers' "
                  f"{empty_answer_f1(run.results):.2f}: it answers questions it should leave "
                  "empty, and wrongly (too few updates or a learning rate that does not suit "
                  "this start)")
    print(f"verdict: {comparison.verdict()}")
    return comparison


def print_pretraining(demo_dir: str) -> None:
    pretraining = os.path.join(demo_dir, "pretraining")
    records = _records(os.path.join(pretraining, "logs", "metrics.jsonl"))
    train = [r for r in records if r["split"] == "train"][-1]
    val = [r for r in records if r["split"] == "val"][-1]
    base = _read_json(os.path.join(pretraining, "baselines.json"))
    with open(os.path.join(pretraining, "seconds"), encoding="utf-8") as f:
        seconds = int(f.read())
    # Two standard errors of a coin's accuracy on the held-out pairs: below that, SOP learned
    # nothing this run can show.
    noise = 2 * math.sqrt(0.25 / base["validation"]["pairs"])
    print(f"pretraining: {train['step']} steps in {seconds}s; held-out = documents it never "
          f"trained on (step {val['step']})")
    print(f"MLM accuracy  train {train['mlm_acc']:.4f}  held-out {val['mlm_acc']:.4f}  "
          f"(always the most frequent masked token: train {base['train']['mlm_unigram_acc']:.4f}"
          f"  held-out {base['validation']['mlm_unigram_acc']:.4f})")
    print(f"SOP accuracy  train {train['sop_acc']:.4f}  held-out {val['sop_acc']:.4f}  "
          f"(a coin: 0.5; +-{noise:.4f} is noise on {base['validation']['pairs']} held-out pairs)")
    mlm_learned = val["mlm_acc"] >= 2 * base["validation"]["mlm_unigram_acc"]
    sop_learned = val["sop_acc"] > 0.5 + noise
    print("  MLM: " + ("well above its baseline on unseen text" if mlm_learned else
                       "NOT clearly above its baseline: the pretraining learned little"))
    print("  SOP: " + ("above chance on unseen text" if sop_learned else
                       "NOT above chance on unseen text" + (
                           f" (train {train['sop_acc']:.2f}: it learned the training pairs' "
                           "order, not yet a rule)" if train["sop_acc"] > 0.6 else "")))


def dev_questions(dev: dict):
    for article in dev["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                yield paragraph["context"], qa


def print_answers(dev: dict, runs: dict, seed: int, count: int) -> None:
    """Both starts' answers (one seed) to the first `count` dev questions, beside the expected."""
    print(f"=== the first {count} dev questions, asked of both fine-tunes (seed {seed}) ===")
    for context, qa in list(dev_questions(dev))[:count]:
        expected = " / ".join(sorted({a["text"] for a in qa["answers"]})) or "(no answer)"
        print(f"passage:    {context}")
        print(f"question:   {qa['question']}")
        print(f"expected:   {expected}")
        for start in STARTS:
            answer = runs[start, seed].predictions.get(qa["id"], "") or "(no answer)"
            label = f"{start}:"
            print(f"{label:<12}{answer}")
        print()


def draw(demo_dir: str, curves: dict[str, dict], path: str) -> None:
    """Held-out MLM and SOP accuracy over the pretraining's updates against their baselines, and
    every fine-tune's dev F1 over its updates against the all-empty line."""
    # Only the picture needs matplotlib (the demo extra), and only here: the rest of the report
    # stays light, and runs where it is not installed.
    try:
        import matplotlib  # the demo extra: see above
    except ImportError:
        raise AlbertError(f"drawing {path} needs matplotlib, which is not installed: "
                          "pip install -e '.[demo]' (scripts/setup.sh installs it), or pass "
                          "--no_picture") from None
    matplotlib.use("Agg")  # files, never a window
    import matplotlib.pyplot as plt  # after use(): the backend is chosen when pyplot loads

    pretraining = os.path.join(demo_dir, "pretraining")
    records = _records(os.path.join(pretraining, "logs", "metrics.jsonl"))
    base = _read_json(os.path.join(pretraining, "baselines.json"))
    panels = 2 + len(curves)
    fig, axes = plt.subplots(1, panels, figsize=(4.6 * panels, 3.8))
    for ax, metric, baseline, label in (
            (axes[0], "mlm_acc", base["validation"]["mlm_unigram_acc"], "most frequent token"),
            (axes[1], "sop_acc", 0.5, "a coin")):
        for split, style in (("train", ":"), ("val", "-")):
            points = [(r["step"], r[metric]) for r in records if r["split"] == split]
            ax.plot(*zip(*points, strict=True), style, marker="o" if split == "val" else None,
                    label="held-out" if split == "val" else "train")
        ax.axhline(baseline, color="grey", linestyle="--", label=label)
        ax.set_title(f"pretraining: {'MLM' if metric == 'mlm_acc' else 'SOP'} accuracy")
        ax.set_xlabel("update")
        ax.legend(fontsize=8)
    for ax, (title, runs) in zip(axes[2:], curves.items(), strict=True):
        seeds = sorted({seed for _, seed in runs})
        for (start, seed), run in sorted(runs.items()):
            if run.curve:
                ax.plot(*zip(*run.curve, strict=True), marker=".",
                        color="tab:blue" if start == "pretrained" else "tab:orange",
                        linestyle=("-", "--", ":", "-.")[seeds.index(seed) % 4],
                        label=f"from {start}, seed {seed}")
        first = next(iter(runs.values())).results
        ax.axhline(empty_answer_f1(first), color="grey", linestyle="--", label="all-empty")
        ax.set_title(f"fine-tune dev F1: {title}")
        ax.set_xlabel("update")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def build_parser() -> flags.Parser:
    p = flags.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--demo_dir", required=True, help="the demo's output directory")
    p.add_argument("--seeds", type=int, nargs="+", required=True,
                   help="the fine-tune seeds on all the training questions, each once (each "
                        "start ran once per seed); the few-labels runs show every seed both "
                        "starts ran")
    p.add_argument("--answers", type=int, default=4,
                   help="how many dev questions (the first of the dev file) both starts answer")
    p.add_argument("--no_picture", action="store_true", help="do not draw the picture")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    with flags.user_errors():
        if len(set(args.seeds)) != len(args.seeds):
            # The same run read twice would count as two seeds and measure no noise.
            raise FlagError(f"--seeds {' '.join(map(str, args.seeds))}: a seed given twice; "
                            "give each seed the demo ran once (scripts/demo.sh runs DEMO_SEED "
                            "and the next)")
        print_pretraining(args.demo_dir)
        curves = {}
        for name, title in (("finetune", "all the training questions"),
                            ("finetune_tenth", "a tenth of the training questions")):
            directory = os.path.join(args.demo_dir, name)
            if not os.path.isdir(directory):
                continue
            # The few-labels runs come from their own command, with seeds of their own.
            seeds = args.seeds if name == "finetune" else seeds_run(directory)
            if not seeds:
                continue
            print()
            runs = read_fine_tunes(directory, seeds)
            print_comparison(title, runs, seeds)
            curves[title] = runs
        print()
        dev = _read_json(os.path.join(args.demo_dir, "squad_data", "dev-v2.0.json"))
        print_answers(dev, curves["all the training questions"], args.seeds[0], args.answers)
        if not args.no_picture:
            path = os.path.join(args.demo_dir, PICTURE)
            draw(args.demo_dir, curves, path)
            print(f"picture: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
