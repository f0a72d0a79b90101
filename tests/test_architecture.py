"""The package's layers as docs/architecture.md draws them: every `albert` import, at the top of a
module or inside a function, points to the module's own layer or one below it, and no two
modules import each other, directly or around a loop."""

import ast
import fnmatch
import io
import json
import os
import pathlib
import re
import subprocess
import sys
import tokenize

import pytest

import albert

ROOT = pathlib.Path(albert.__file__).parent
# Bottom to top. A package is one layer; the modules directly under albert/ are the commands
# (`python -m albert.<tool>`), except the foundations every layer may use.
LAYERS = ["foundation", "model", "eval", "data", "io", "train", "tasks", "cli", "commands"]
FOUNDATION = {"albert.errors", "albert.fs"}
PACKAGE_LAYERS = {"model", "eval", "data", "io", "train", "tasks", "cli"}
# The one way up, declared: transformers' spelling on the model classes
# (`AlbertForPreTraining.from_pretrained(dir)`, `model.save_pretrained(dir)`) hands over to
# albert.io.pretrained, imported inside those methods only, so the model never loads the readers.
LATE_BOUND = {("albert.model.modeling", "albert.io.pretrained"): {"from_pretrained",
                                                                 "save_pretrained"}}


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    if module in FOUNDATION or module == "albert":
        return "foundation"
    first = module.split(".")[1]
    return first if first in PACKAGE_LAYERS else "commands"


def modules() -> dict[str, pathlib.Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def albert_imports(path: pathlib.Path, known: set[str]) -> set[str]:
    """The albert modules `path` imports (`from albert.x import y` counts albert.x.y when y is a
    module), wherever the import statement stands."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("albert.")}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "albert" or node.module.startswith("albert.")):
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in known else node.module)
    return found - {"albert"}


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: albert_imports(path, known) - {name} for name, path in found.items()
            if name != "albert"}  # albert/__init__ names its exports as strings, imported lazily


def documented_layers() -> tuple[list[str], dict[str, set[str]]]:
    """docs/architecture.md's module tables: the layers in the order of their headings, and
    each name a table row gives in its first cell -> the layers whose table gives it."""
    text = (ROOT.parents[1] / "docs" / "architecture.md").read_text()
    tables = text.split("\n## Modules\n", 1)[1].split("\n## Tests\n", 1)[0]
    order, listed = [], {}
    for section in re.split(r"^### ", tables, flags=re.M)[1:]:
        heading, body = section.split("\n", 1)
        package = re.fullmatch(r"`albert\.(\w+)`", heading.strip())
        layer = package.group(1) if package else heading.split()[0].lower()  # Foundation, ...
        order.append(layer)
        for cell in re.findall(r"^\| ([^|]+) \|", body, flags=re.M):
            for name in re.findall(r"`([a-z_][\w.]*)`", cell):
                listed.setdefault(name, set()).add(layer)
    return order, listed


def test_each_module_is_in_the_layer_whose_table_lists_it_and_names_its_job():
    """Every module lies in the layer under whose heading docs/architecture.md lists it (a
    module the tables do not list by name, under its package's: demo.sample under demo), the
    headings are the layers bottom to top, and every layer holds a module."""
    found = modules()
    order, listed = documented_layers()
    assert order == LAYERS
    misplaced = {}
    for name in found:
        parts = name.removeprefix("albert.").split(".")
        where = next((listed[".".join(parts[:n])] for n in range(len(parts), 0, -1)
                      if ".".join(parts[:n]) in listed), set())
        if name != "albert" and where != {layer_of(name)}:
            misplaced[name] = (layer_of(name), sorted(where))
    assert misplaced == {}
    assert {layer_of(name) for name in found} == set(LAYERS)
    for name, path in found.items():
        if path.stat().st_size:  # an empty __init__.py marks a package and nothing else
            doc = ast.get_docstring(ast.parse(path.read_text()))
            assert doc and doc.strip(), f"{name} has no docstring saying what it is for"


def test_no_module_imports_from_a_layer_above_its_own():
    upward = [f"{name} ({layer_of(name)}) imports {target} ({layer_of(target)})"
              for name, targets in graph().items() for target in sorted(targets)
              if LAYERS.index(layer_of(target)) > LAYERS.index(layer_of(name))
              and (name, target) not in LATE_BOUND]
    assert upward == []


def importing_functions(path: pathlib.Path, target: str) -> list[str]:
    """The names of the functions of `path` that import `target` ("<module>" for the top)."""
    tree = ast.parse(path.read_text())
    inside = {id(node): fn.name for fn in ast.walk(tree)
              if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) for node in ast.walk(fn)}
    return sorted(inside.get(id(node), "<module>") for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) and node.module == target)


def test_the_declared_way_up_is_taken_only_inside_its_methods(tmp_path):
    found = modules()
    for (name, target), allowed in LATE_BOUND.items():
        assert LAYERS.index(layer_of(target)) > LAYERS.index(layer_of(name))
        where = importing_functions(found[name], target)
        assert where and set(where) <= allowed, f"{name} imports {target} in {where}"
    # The check itself: an import at the top of the module is caught.
    probe = tmp_path / "probe.py"
    probe.write_text("from albert.io.pretrained import load_pretrained\n"
                     "def from_pretrained():\n    from albert.io.pretrained import x\n")
    assert importing_functions(probe, "albert.io.pretrained") == ["<module>", "from_pretrained"]


def test_the_import_graph_has_no_cycle():
    edges = graph()
    state, cycles = {}, []

    def visit(node, stack):
        state[node] = "open"
        for target in sorted(edges.get(node, ())):
            if state.get(target) == "open":
                cycles.append(" -> ".join(stack[stack.index(target):] + [target]))
            elif target not in state:
                visit(target, stack + [target])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert cycles == []


def test_the_layer_check_catches_an_upward_import_and_a_cycle(tmp_path, monkeypatch):
    """The checks above would fail on the faults they look for (a copy of the package with one
    upward import and one two-module loop)."""
    import shutil

    copy = tmp_path / "albert"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    model = copy / "model" / "config.py"
    model.write_text(model.read_text() + "\nfrom albert.train import trainer  # noqa\n")
    (copy / "eval" / "loop_a.py").write_text('"""a"""\nfrom albert.eval import loop_b\n')
    (copy / "eval" / "loop_b.py").write_text('"""b"""\nfrom albert.eval import loop_a\n')
    monkeypatch.setitem(globals(), "ROOT", copy)
    edges = graph()
    assert "albert.train.trainer" in edges["albert.model.config"]
    assert LAYERS.index(layer_of("albert.train.trainer")) > LAYERS.index("model")
    assert edges["albert.eval.loop_a"] == {"albert.eval.loop_b"}
    assert edges["albert.eval.loop_b"] == {"albert.eval.loop_a"}


def test_docs_architecture_names_every_module():
    """docs/architecture.md is the module map: a module missing from it means the map is
    stale (the other way, a name it gives that no longer exists, is the next test's)."""
    text = (ROOT.parents[1] / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`((?:albert\.)?[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)`", text))
    for name, path in modules().items():
        if name == "albert" or (path.name == "__init__.py" and not path.stat().st_size):
            continue
        short = name.removeprefix("albert.")
        assert short in named or name in named, f"docs/architecture.md does not name {short}"


# A dotted name that begins like a module path but is a file's name.
FILE_NAMES = {"model.safetensors"}
# A path in the repository table (a folder or a file), checked by the repository test, not as a
# module's name.
REPOSITORY_PATH = re.compile(r"/|\.(?:py|sh|toml|yaml|md)$")


def top_level_names(path: pathlib.Path) -> dict[str, set[str]]:
    """The names a module binds at its top (in an if or try there too), each with the names its
    body binds if it is a class; for albert/__init__.py also its lazy exports."""
    names: dict[str, set[str]] = {}

    def bound(body):
        for node in body:
            if isinstance(node, ast.ClassDef):
                names[node.name] = {n.name for n in node.body if isinstance(
                    n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)} | {
                    t.id for n in node.body if isinstance(n, ast.Assign | ast.AnnAssign)
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                    if isinstance(t, ast.Name)}
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names[node.name] = set()
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names.update({t.id: set() for t in ast.walk(target)
                                  if isinstance(t, ast.Name)})
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names.update({(a.asname or a.name).split(".")[0]: set() for a in node.names})
            elif isinstance(node, ast.If | ast.Try | ast.With):
                for part in ("body", "orelse", "finalbody", "handlers"):
                    bound(getattr(node, part, []))
            elif isinstance(node, ast.ExceptHandler):
                bound(node.body)

    bound(ast.parse(path.read_text()).body)
    if module_name(path) == "albert":
        names.update({name: set() for name in albert.__all__})
    return names


def resolves(name: str, found: dict[str, pathlib.Path]) -> bool:
    """Whether `albert.x.y[.Name[.attr]]` is a module, a name bound at the top of one, or a name
    bound in the body of a class bound there."""
    parts = name.split(".")
    cut = max(i for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in found)
    rest = parts[cut:]
    if not rest:
        return True
    names = top_level_names(found[".".join(parts[:cut])])
    return len(rest) <= 2 and rest[0] in names and (len(rest) == 1 or rest[1] in names[rest[0]])


def stale_names_in_docs(text: str, found: dict[str, pathlib.Path]) -> list[str]:
    """The names docs/architecture.md gives that no module answers to. Checked: every backticked
    dotted name that starts with `albert.` or with the name of something directly under albert/
    (`train.run_dir`, `data.squad.SquadError`, `demo.sample`), a file named in FILE_NAMES aside;
    and every name in the first column of a module table, each of which must be a module (an
    undotted name elsewhere may be a function's: `add_alias`)."""
    tops = {name.split(".")[1] for name in found if name.count(".") >= 1}
    dotted = {n for n in re.findall(r"`((?:albert\.)?[a-z_]\w*(?:\.[A-Za-z_]\w*)+)`", text)
              if n not in FILE_NAMES and (n.startswith("albert.") or n.split(".")[0] in tops)}
    stale = {n for n in dotted if not resolves(n if n.startswith("albert.") else f"albert.{n}",
                                               found)}
    in_tables = {n for row in re.findall(r"^\| ([^|]+) \|", text, flags=re.M)
                 for n in re.findall(r"`([^`]+)`", row) if not REPOSITORY_PATH.search(n)}
    return sorted(stale | {n for n in in_tables
                           if (n if n.startswith("albert.") else f"albert.{n}") not in found})


def test_every_module_name_in_docs_architecture_exists(tmp_path):
    found = modules()
    text = (ROOT.parents[1] / "docs" / "architecture.md").read_text()
    assert stale_names_in_docs(text, found) == [], "docs/architecture.md names what is gone"
    # The check itself, on a copy of the map with stale names put in.
    copy = tmp_path / "architecture.md"
    copy.write_text(text.replace("`train.run_dir`", "`train.run_record`").replace(
        "`data.squad.FeatureSettings`", "`data.squad.Settings`").replace(
        "`albert.answer`", "`albert.ask`") + "\n| `squad_metrics` | scores |\n"
        "`model.config.AlbertConfig.from_preset` `tasks.runner.run.inner` `model.safetensors`\n")
    assert stale_names_in_docs(copy.read_text(), found) == [
        "albert.ask", "data.squad.Settings", "squad_metrics", "tasks.runner.run.inner",
        "train.run_record"]


def stale_names_in_source(source: str, found: dict[str, pathlib.Path]) -> list[str]:
    """The `albert.x.y` names in `source`'s docstrings and comments (string values are data:
    Hugging Face's tensor names start with albert. too) that are no module, nor a name bound in
    one (the rule of `resolves`)."""
    texts = [tok.string for tok in tokenize.generate_tokens(io.StringIO(source).readline)
             if tok.type == tokenize.COMMENT]
    texts += [ast.get_docstring(node, clean=False) or "" for node in ast.walk(ast.parse(source))
              if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                            | ast.AsyncFunctionDef)]
    named = {n.rstrip(".") for text in texts
             for n in re.findall(r"(?<![\w.])albert(?:\.[A-Za-z_]\w*)+", text)}
    return sorted(n for n in named if not resolves(n, found))


def test_every_module_name_in_the_packages_docstrings_and_comments_exists():
    found = modules()
    stale = [f"{name}: {n}" for name, path in found.items()
             for n in stale_names_in_source(path.read_text(), found)]
    assert stale == [], "docstrings and comments name modules that are gone"
    # The check itself: a gone module, a gone function and a gone top-level name are caught; a
    # string's value, a real function and a lazy export are not.
    probe = ('"""Runs on albert.train.run_record."""\n'
             "NAME = 'albert.encoder.layer'  # as albert.train.run_dir.start_state does\n"
             "def f():\n    \"\"\"See albert.run and albert.load_pretrained.\"\"\"\n"
             "    # albert.cli.flags.no_such_thing.\n")
    assert stale_names_in_source(probe, found) == [
        "albert.cli.flags.no_such_thing", "albert.run", "albert.train.run_record"]


def bare_function_imports(source: str) -> list[int]:
    """The lines of import statements inside a function of `source` that no comment explains:
    an import waits in a function only for a reason (a heavy optional dependency, a module that
    must stay importable without TensorFlow), said in a comment on its line or in the comment
    lines above it, which may head a block of several imports of that function."""
    lines = source.splitlines()

    def commented(first: int, last: int) -> bool:  # 1-based lines of one statement
        if any(_is_reason(line) for line in lines[first - 1:last]):
            return True
        row = first - 1
        while row > 0 and row not in code_rows:
            if _is_reason(lines[row - 1]):
                return True
            row -= 1
        return False

    tree = ast.parse(source)
    imports = {node.lineno: node.end_lineno for fn in ast.walk(tree)
               if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef)
               for node in ast.walk(fn) if isinstance(node, ast.Import | ast.ImportFrom)}
    # Lines of code that end the search upwards: every statement's but the imports' (of a
    # compound statement, its header's, up to its body's first statement).
    code_rows = {row for node in ast.walk(tree) if isinstance(node, ast.stmt)
                 and not isinstance(node, ast.Import | ast.ImportFrom)
                 for row in range(node.lineno, (node.body[0].lineno if hasattr(node, "body")
                                                else node.end_lineno + 1))
                 if lines[row - 1].strip() and not lines[row - 1].lstrip().startswith("#")}
    return sorted(first for first, last in imports.items() if not commented(first, last))


def _is_reason(line: str) -> bool:
    comment = line.partition("#")[2].strip()
    return bool(comment) and not comment.startswith(("noqa", "type:"))


def test_every_import_inside_a_function_says_why_it_waits():
    bare = [f"{name} line {row}" for name, path in modules().items()
            for row in bare_function_imports(path.read_text())]
    assert bare == [], "imports belong at the top of the module; one that must wait says why"
    # The check itself: a bare import is caught, one under its reason (or beside it) is not.
    assert bare_function_imports("def f():\n    x = 1\n    import json\n") == [3]
    assert bare_function_imports('def f():\n    """doc"""\n    from os import path\n') == [3]
    assert bare_function_imports("def f():\n    import os  # noqa: F401\n") == [2]
    assert bare_function_imports("def f():\n    # TensorFlow: --help runs without it\n"
                                 "    import tensorflow as tf\n\n    import keras\n") == []
    assert bare_function_imports("def f():\n    import torch  # optional\n") == []


# The command-line tools, which answer --help and a bad flag (the runners --plan_only too) without
# loading TensorFlow: what they import at start must not import it.
TENSORFLOW_FREE_COMMANDS = (
    "run_pretraining", "run_squad", "run_classifier", "answer", "classify", "export", "plan",
    "check_records", "create_pretraining_data", "train_tokenizer", "squad_eval", "corpus_text")
# tasks.runner's __main__ is no tool: the child process a pretraining run starts for SQuAD.
NOT_TOOLS = ("tasks.runner",)


def tools() -> list[str]:
    """Every module a user runs with `python -m albert.<name>`: each with a __main__ block."""
    return sorted(name.removeprefix("albert.") for name, path in modules().items()
                  if 'if __name__ == "__main__":' in path.read_text()
                  and name.removeprefix("albert.") not in NOT_TOOLS)


# One fresh interpreter: each tool's main() answers --help (usage on stdout, status 0), and then
# the first tool after which TensorFlow (or Keras) is loaded is named.
HELP_PROBE = """
import contextlib, importlib, io, json, sys
results = {}
for name in sys.argv[1:]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            status = importlib.import_module('albert.' + name).main(['--help'])
        except SystemExit as e:
            status = e.code
    loaded = bool({'tensorflow', 'keras'} & set(sys.modules))
    results[name] = [status, out.getvalue().startswith('usage:'), loaded]
    if loaded:
        break
print(json.dumps(results))
"""


@pytest.mark.e2e
def test_every_tool_answers_help_without_tensorflow():
    """Issue 52: `python -m albert.<tool> --help` of every tool runs without importing
    TensorFlow: the commands import what computes only once the flags are read."""
    names = tools()
    assert set(TENSORFLOW_FREE_COMMANDS) <= set(names) and "demo.sweep" in names
    env = {**os.environ, "PYTHONPATH": str(ROOT.parent)}
    out = subprocess.run([sys.executable, "-c", HELP_PROBE, *names], env=env,
                         capture_output=True, text=True, check=True, timeout=120).stdout
    results = json.loads(out.strip().splitlines()[-1])
    assert results == {name: [0, True, False] for name in names}


def unmapped(text: str, root: pathlib.Path) -> list[str]:
    """What the repository table of docs/architecture.md misses or names wrongly: a top-level
    folder (neither hidden nor ignored by .gitignore) or a script under scripts/ that the map does
    not name (a benchmark module by its file name, the others by their path), and a path in the
    first column of a table that does not exist."""
    ignored = [line.strip().strip("/") for line in (root / ".gitignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")]
    named = set(re.findall(r"`([^`]+)`", text))
    missing = [f"{p.name}/" for p in sorted(root.iterdir())
               if p.is_dir() and not p.name.startswith(".")
               and not any(fnmatch.fnmatch(p.name, pattern) for pattern in ignored)
               and f"{p.name}/" not in named and not any(n.startswith(f"{p.name}/") for n in named)]
    for script in sorted((root / "scripts").rglob("*")):
        relative = script.relative_to(root).as_posix()
        if (script.is_file() and script.name != "__init__.py" and "__pycache__" not in relative
                and relative not in named
                and not (script.parent.name == "benchmarks" and script.name in named)):
            missing.append(relative)
    in_tables = {n for row in re.findall(r"^\| ([^|]+) \|", text, flags=re.M)
                 for n in re.findall(r"`([^`]+)`", row) if REPOSITORY_PATH.search(n)}
    return missing + sorted(f"{n} does not exist" for n in in_tables if not (root / n).exists())


def test_docs_architecture_maps_the_repository(tmp_path):
    """One map: docs/architecture.md's repository table names every top-level folder and every
    script, and nothing that is gone."""
    root = ROOT.parents[1]
    text = (root / "docs" / "architecture.md").read_text()
    assert unmapped(text, root) == [], "docs/architecture.md's repository table is stale"
    assert not (root / "docs" / "layout.md").exists(), "docs/architecture.md is the one map"
    # The check itself: a script and a folder left out, and a path that is gone, are caught.
    stale = text.replace("`scripts/tensorboard.sh`", "`scripts/tensorboards.sh`").replace(
        "| `cloudformation/` |", "| the templates |").replace("`restart.py`", "restart")
    assert unmapped(stale, root) == [
        "cloudformation/", "scripts/benchmarks/restart.py", "scripts/tensorboard.sh",
        "scripts/tensorboards.sh does not exist"]
