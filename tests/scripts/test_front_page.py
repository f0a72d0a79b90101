"""README.md's "Pretrain on your own text" block runs as written.

The block is what a new user copies first, so the suite runs it: every command of it, in order,
as a user's shell would, on a folder of text files and a labelled TSV that this test writes (not
the demo's corpus). Only the step counts are shortened (`--total_steps` and
`--num_train_epochs` values): a flag renamed in the code, a path one command writes and the next
does not find, or a command that fails on text that is not the demo's fails here.
"""

import os
import pathlib
import random
import re
import shlex
import subprocess
import sys

import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADING = "## Pretrain on your own text"
FENCE = re.compile(r"^```bash\n(.*?)^```", re.M | re.S)
# The only change the test makes to the block: its step counts, so that it runs in a minute.
SHORTER = {"--total_steps": "4", "--warmup_steps": "1", "--num_train_epochs": "1"}

# Made-up English: common words in story sentences, with invented names, towns and things, so
# that the text shares nothing with the demo's. The block asks for a vocabulary of 3,000 pieces,
# which train_tokenizer refuses for text too plain to fill it: the invented words come from about
# 1,500 syllables, and 600 documents (about 330 KB) make some 3,900 pieces at most.
DOCUMENTS = 600
ONSETS = "b c d f g h k l m n p r s t v w z br cr dr gl pl st tr".split()
SYLLABLES = sorted({c + v + k for c in ONSETS for v in "a e i o u ai ea ou".split()
                    for k in ("", "n", "r", "l", "s", "m", "th", "nd")})
PLACES = ["harbour", "market", "orchard", "mill", "bridge", "valley", "library", "workshop",
          "chapel", "quarry", "meadow", "station", "garden", "forge", "tavern", "school"]
THINGS = ["lantern", "basket", "ledger", "wagon", "kettle", "ribbon", "compass", "barrel",
          "saddle", "blanket", "chisel", "violin", "teapot", "anchor", "map", "candle"]
ADJECTIVES = ["old", "narrow", "quiet", "crowded", "painted", "broken", "golden", "muddy",
              "cheerful", "distant", "crooked", "sturdy", "famous", "forgotten", "damp", "bright"]
VERBS = ["carried", "repaired", "sold", "hid", "borrowed", "polished", "found", "traded",
         "painted", "counted", "lost", "measured", "mended", "weighed", "wrapped", "returned"]
SEASONS = ["spring", "summer", "autumn", "winter"]
WEATHER = ["rain", "fog", "snow", "wind", "frost", "sunshine", "thunder", "drizzle"]
# The labelled task: whether a sentence is about the weather or about trade.
LABELLED = {
    "weather": ["The {w} came over the {p} of {town} early in the {s}.",
                "By noon the {w} had settled on the {a} {p}.",
                "Nobody in {town} remembered so much {w} in one {s}.",
                "{name} watched the {w} roll down the {p} from the window."],
    "trade": ["{name} sold a {a} {t} at the {p} for three coins.",
              "The merchants of {town} traded a {t} for a {t2}.",
              "At the {p}, {name} bought a {t} and paid with silver.",
              "{name} counted the coins from every {t} sold in {town}."],
}


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


def _fill(template: str, rng: random.Random, name: str = "", town: str = "") -> str:
    return template.format(
        name=name or _word(rng).capitalize(), town=town or _word(rng).capitalize(),
        p=rng.choice(PLACES),
        t=rng.choice(THINGS), t2=rng.choice(THINGS), a=rng.choice(ADJECTIVES),
        v=rng.choice(VERBS), s=rng.choice(SEASONS), w=rng.choice(WEATHER), x=_word(rng))


STORY = ["{name} {v} the {a} {t} near the {p} of {town}.",
         "In {s} the {p} was {a}, and {name} kept the {t} there.",
         "A {x} is what the people of {town} call a {a} {t}.",
         "{name} said the {x} at the {p} had been {v} twice.",
         "Later {name} {v} a {t} for the {a} {p} in {town}.",
         "Every {s}, the {p} of {town} fills with {w} and {x} traders.",
         "The {t} that {name} {v} was older than the {p} itself.",
         "Why would anyone in {town} keep a {x} beside a {t}?",
         "Children from the {p} ran after {name}'s {a} {t}!"]


def write_own_text(text_dir: pathlib.Path, labels_dir: pathlib.Path, seed: int = 7) -> None:
    """A folder of three text files (one document per line: DOCUMENTS documents of 6 to 10
    sentences) and train.tsv / dev.tsv with a `sentence` and a `label` column."""
    rng = random.Random(seed)
    text_dir.mkdir(parents=True)
    for part in range(3):
        lines = []
        for _ in range(DOCUMENTS // 3):
            # A document keeps its people and its town, as a story does.
            names, town = [_word(rng).capitalize() for _ in range(2)], _word(rng).capitalize()
            lines.append(" ".join(_fill(rng.choice(STORY), rng, rng.choice(names), town)
                                  for _ in range(rng.randint(6, 10))))
        (text_dir / f"stories_{part}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    labels_dir.mkdir(parents=True)
    for name, count in (("train", 48), ("dev", 16)):
        rows = ["sentence\tlabel"]
        for i in range(count):
            label = sorted(LABELLED)[i % 2]
            rows.append(f"{_fill(rng.choice(LABELLED[label]), rng)}\t{label}")
        (labels_dir / f"{name}.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def own_text_block(readme: str) -> str:
    """The first bash block under the own-text heading."""
    start = readme.index(HEADING)
    match = FENCE.search(readme, start)
    assert match, f"README.md has no bash block under {HEADING!r}"
    return match.group(1)


def block_commands(block: str) -> list[list[str]]:
    """The block's commands, continuation lines joined and comments dropped, as argv lists."""
    joined = block.replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in joined.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def shortened(argv: list[str]) -> list[str]:
    """`argv` with the values of the SHORTER flags replaced, and nothing else."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg in SHORTER:
            out[i + 1] = SHORTER[arg]
    return out


def test_the_block_is_read_and_only_its_step_counts_change():
    commands = block_commands(own_text_block((REPO_ROOT / "README.md").read_text()))
    tools = [argv[2] for argv in commands if argv[:2] == ["python", "-m"]]
    assert len(tools) == len(commands), "every command of the block is `python -m albert.<tool>`"
    assert tools[:3] == ["albert.train_tokenizer", "albert.create_pretraining_data",
                         "albert.run_pretraining"]
    assert {"albert.run_classifier", "albert.run_squad"} & set(tools[3:])
    for argv in commands:
        changed = [(a, b) for a, b in zip(argv, shortened(argv), strict=True) if a != b]
        assert all(value.isdigit() for _, value in changed), changed


@pytest.mark.e2e
@pytest.mark.slow
def test_the_own_text_block_runs_as_written(tmp_path):
    readme = (REPO_ROOT / "README.md").read_text()
    block = own_text_block(readme)
    commands = block_commands(block)
    text_dir, labels_dir = tmp_path / "my_text", tmp_path / "my_labels"
    assert "my_text/" in block and "my_labels/train.tsv" in block, (
        "the block reads a folder my_text/ and my_labels/train.tsv: the test writes those")
    write_own_text(text_dir, labels_dir)
    # The environment a user has (the package installed in .venv), without the tests' quiet
    # log settings (conftest).
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "TRANSFORMERS_VERBOSITY")}
    for argv in commands:
        argv = shortened(argv)
        proc = subprocess.run([sys.executable, *argv[1:]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        shown = shlex.join(argv)
        assert proc.returncode == 0, f"{shown}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        outputs = [argv[i + 1] for i, a in enumerate(argv[:-1])
                   if a in ("--output_dir", "--checkpoint_dir")]
        assert outputs and all((tmp_path / o).is_dir() and any((tmp_path / o).iterdir())
                               for o in outputs), f"{shown} wrote nothing to {outputs}"
        if argv[2] in ("albert.run_pretraining", "albert.run_classifier", "albert.run_squad"):
            summary = [line for line in proc.stdout.splitlines() if line.startswith("summary:")]
            assert summary, f"{shown} printed no summary: line"
