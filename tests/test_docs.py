"""The docs cannot drift from the code. In README.md and docs/*.md: every `python -m albert.<tool>`
command in a fenced block parses with that tool's own parser (each flag exists, each value is one
its flag takes, the required flags are there), every `scripts/...` path exists, every Python
block compiles, and every link within the repository finds its file and its heading. A flag
renamed in the code and left in a guide, or a section moved and still linked, fails here."""

import contextlib
import io
import pathlib
import re
import shlex

import pytest
from helpers import tool_parser

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^[ \t]*```([\w+-]*)[^\n]*\n(.*?)^[ \t]*```", re.M | re.S)
SCRIPT_PATH = re.compile(r"(?<![\w./-])scripts/[\w./-]*\w")
OPERATOR = set("();<>|&")
# A shell variable or a <placeholder> stands for a value the reader chooses: any value its flag
# takes will do. "..." stands for flags left out: the required ones are then not asked for.
PLACEHOLDER = re.compile(r"<[\w -]+>")
STANDS_FOR_A_VALUE = re.compile(r"\$|@VALUE@")


def shell_commands(block: str):
    """(first words, tool, its arguments) of each `-m albert.<tool>` command in a shell block;
    continuation lines joined, comments dropped, ending at the first shell operator."""
    for line in block.replace("\\\n", " ").splitlines():
        line = PLACEHOLDER.sub("@VALUE@", line.strip().removeprefix("$ "))
        if "-m albert." not in line or line.startswith("#"):
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
        for i, token in enumerate(tokens[:-1]):
            if token == "-m" and tokens[i + 1].startswith("albert."):
                args = []
                for arg in tokens[i + 2:]:
                    if set(arg) <= OPERATOR:
                        break
                    args.append(arg)
                if args and args[-1].isdigit() and tokens[i + 2 + len(args):][:1] in (
                        [">"], [">&"], [">>"]):
                    args.pop()  # 2>&1, 2> log: a redirection, not an argument
                yield line, tokens[i + 1].removeprefix("albert."), args


def a_value_for(action) -> str:
    """A value `action` takes, to stand in for a shell variable or a placeholder."""
    if action is None or action.type is None and not action.choices:
        return "x"
    for candidate in ([str(c) for c in action.choices or ()] or ["1", "0.5", "auto", "x"]):
        try:
            value = action.type(candidate) if action.type else candidate
        except (TypeError, ValueError, Exception):  # argparse types raise their own errors
            continue
        if not action.choices or value in action.choices:
            return candidate
    return "x"


def parse_problem(tool: str, args: list[str]) -> str | None:
    """What `python -m albert.<tool> args` would refuse at parsing, or None."""
    try:
        parser = tool_parser(tool)
    except ModuleNotFoundError:
        return f"there is no albert.{tool}"
    options = parser.option_actions()
    fragment, previous, resolved = False, None, []
    for arg in args:
        takes_value = previous in options and options[previous].nargs != 0
        if arg == "..." and not takes_value:
            fragment = True
            continue
        if STANDS_FOR_A_VALUE.search(arg) or arg == "...":
            name, eq, _ = arg.partition("=")
            if eq and name in options:
                arg = f"{name}={a_value_for(options[name])}"
            else:
                arg = a_value_for(options[previous] if takes_value else None)
        resolved.append(arg)
        previous = arg
    if fragment:
        for action in parser.actions():
            action.required = False
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parser.parse_args(resolved)
    except SystemExit as e:
        if e.code:
            return err.getvalue().strip().splitlines()[-1]
    return None


def problems(text: str, name: str) -> list[str]:
    found = []
    for match in FENCE.finditer(text):
        language, block = match.group(1).lower(), match.group(2)
        line = text.count("\n", 0, match.start()) + 1
        if language == "python":
            try:
                compile(block, f"{name}:{line}", "exec")
            except SyntaxError as e:
                found.append(f"{name}:{line}: a Python block does not compile: {e}")
            continue
        for command, tool, args in shell_commands(block):
            problem = parse_problem(tool, args)
            if problem:
                found.append(f"{name}:{line}: {command!r}: {problem}")
    for match in SCRIPT_PATH.finditer(text):
        if not (ROOT / match.group()).exists():
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{name}:{line}: {match.group()} does not exist")
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_command_flag_script_and_snippet_in_the_docs_exists(doc, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert problems(doc.read_text(encoding="utf-8"), doc.relative_to(ROOT).as_posix()) == []


def test_the_docs_check_catches_what_drifts():
    """A renamed flag, a value its flag does not take, a missing required flag, a tool or script
    that is gone and a Python block that does not compile are each caught; shell variables,
    placeholders, "..." and redirections are not mistaken for faults."""
    fine = ("```bash\n"
            "python -m albert.run_squad --train_file $DATA/train.json --xla on \\\n"
            "    --per_gpu_batch_size ${BATCH} 2>&1 | tee log  # a comment\n"
            "nice -n 5 python -m albert.export --checkpoint_path <run> --head qa "
            "--output_dir out && echo done\n"
            "python -m albert.run_pretraining ... --precision bf16\n"
            "bash scripts/demo.sh\n```\n"
            "```python\nfrom albert import AlbertForPreTraining\n```\n")
    assert problems(fine, "fine.md") == []
    stale = ("```bash\npython -m albert.run_squad --train_fle x.json\n"
             "python -m albert.run_squad --xla maybe\n"
             "python -m albert.export --head qa --output_dir out\n"
             "python -m albert.run_bert --x 1\n"
             "bash scripts/gone.sh\n```\n"
             "```python\ndef f(:\n```\n")
    found = problems(stale, "stale.md")
    expected = ["unrecognized arguments: --train_fle", "invalid choice: 'maybe'",
                "the following arguments are required: --checkpoint_path",
                "there is no albert.run_bert", "a Python block does not compile",
                "scripts/gone.sh does not exist"]
    assert len(found) == len(expected), found
    for problem, words in zip(found, expected, strict=True):
        assert words in problem, (words, problem)


LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lowercase, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    prose = FENCE.sub("", text)
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", prose, flags=re.M)}


def broken_links(text: str, doc: pathlib.Path) -> list[str]:
    """The links in `text` (outside code blocks) to a file of the repository that is not there, or
    to a heading that the file does not have."""
    found = []
    for target in LINK.findall(FENCE.sub("", text)):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve()
        if path and not file.exists():
            found.append(f"{doc.name}: {target}: no such file")
        elif anchor and (not path or file.suffix == ".md") and anchor not in anchors(
                file.read_text(encoding="utf-8") if path else text):
            found.append(f"{doc.name}: {target}: no such heading")
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_link_in_the_docs_finds_its_file_and_heading(doc):
    assert broken_links(doc.read_text(encoding="utf-8"), doc) == []


def test_the_link_check_catches_a_moved_section(tmp_path):
    (tmp_path / "guide.md").write_text("# Guide\n\n## Real data: Wikipedia + SQuAD\n\n```bash\n"
                                       "# not a heading\n```\n")
    doc = tmp_path / "index.md"
    text = ("[ok](guide.md#real-data-wikipedia--squad) [web](https://example.com/x#y) "
            "[gone](layout.md) [moved](guide.md#what-the-demo-shows) "
            "[fenced](guide.md#not-a-heading) [here](#top)\n\n# Top\n")
    assert broken_links(text, doc) == [
        "index.md: layout.md: no such file",
        "index.md: guide.md#what-the-demo-shows: no such heading",
        "index.md: guide.md#not-a-heading: no such heading"]
