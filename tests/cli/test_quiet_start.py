"""albert.cli.quiet_start: TensorFlow's start-up lines hidden, and what that hides still
seen when it matters. A stand-in module writes to file descriptor 2 as TensorFlow's C++ start-up
does, in this process (pytest's capfd captures that descriptor); one that aborts, in a child."""

import os
import subprocess
import sys

import pytest

from albert.cli import flags
from albert.cli.quiet_start import import_tensorflow, start_environment

NOISE = "oneDNN custom operations are on (a C++ line, before any log level applies)"
BROKEN = "libcudart.so.12: cannot open shared object file: No such file or directory"
VARIABLES = ("TF_CPP_MIN_LOG_LEVEL", "TRANSFORMERS_VERBOSITY", "ALBERT_SHOW_START_UP",
             "TF_CPU_ALLOCATOR_USE_BFC")


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """Modules written as TensorFlow's start-up writes: one imports, one fails, one aborts the
    process; imported afresh in each test, with the variables undone after it."""
    (tmp_path / "noisy_ok.py").write_text(f"import os\nos.write(2, b'{NOISE}\\n')\n")
    (tmp_path / "noisy_broken.py").write_text(
        f"import os\nos.write(2, b'{BROKEN}\\n')\n"
        "raise ImportError('the start-up failed: see above')\n")
    (tmp_path / "noisy_abort.py").write_text(f"import os\nos.write(2, b'{BROKEN}\\n')\n"
                                             "os.abort()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("noisy_ok", "noisy_broken"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_start_up_lines_are_hidden(stand_in, capfd):
    start_environment(False)
    module = import_tensorflow(False, module="noisy_ok")

    assert module is sys.modules["noisy_ok"]
    assert capfd.readouterr().err == ""
    os.write(2, b"after\n")  # the descriptor is the process's stderr again
    assert capfd.readouterr().err == "after\n"


def test_a_failing_import_shows_its_real_error(stand_in, capfd):
    """What the import wrote before it failed is the cause: printed, then its Python error."""
    start_environment(False)
    with pytest.raises(ImportError, match="the start-up failed"):
        import_tensorflow(False, module="noisy_broken")
    assert capfd.readouterr().err == f"{BROKEN}\n"


@pytest.mark.e2e
def test_an_import_that_kills_the_process_shows_what_it_wrote(stand_in, tmp_path):
    """An abort inside the import leaves no Python to print anything: the lines it wrote still
    reach stderr, and the process dies as it would have."""
    code = ("from albert.cli.quiet_start import import_tensorflow, start_environment\n"
            "start_environment(False)\n"
            "import_tensorflow(False, module='noisy_abort')\n"
            "print('not reached')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == -6  # SIGABRT
    assert proc.stdout == ""
    assert BROKEN in proc.stderr


@pytest.mark.parametrize("show", ["1", "yes"])
def test_the_variable_shows_the_hidden_lines(stand_in, capfd, show):
    stand_in.setenv("ALBERT_SHOW_START_UP", show)
    start_environment(False)
    import_tensorflow(False, module="noisy_ok")

    assert capfd.readouterr().err == f"{NOISE}\n"


def test_verbose_shows_them_too(stand_in, capfd):
    start_environment(True)
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"
    import_tensorflow(True, module="noisy_ok")

    assert capfd.readouterr().err == f"{NOISE}\n"


def test_the_start_sets_defaults_and_a_value_the_user_set_wins(stand_in):
    """Issue 52: a command's process gets TensorFlow's BFC CPU allocator (and its quiet log
    level) where the user said nothing; TF_CPU_ALLOCATOR_USE_BFC=false stays false."""
    start_environment(False)
    assert {n: os.environ.get(n) for n in VARIABLES} == {
        "TF_CPP_MIN_LOG_LEVEL": "2", "TRANSFORMERS_VERBOSITY": "error",
        "ALBERT_SHOW_START_UP": None, "TF_CPU_ALLOCATOR_USE_BFC": "true"}
    stand_in.setenv("TF_CPU_ALLOCATOR_USE_BFC", "false")
    stand_in.setenv("TF_CPP_MIN_LOG_LEVEL", "1")
    start_environment(False)
    assert os.environ["TF_CPU_ALLOCATOR_USE_BFC"] == "false"
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "1"


def test_run_main_starts_tensorflow_after_the_flags(stand_in, monkeypatch):
    """run_main: the flags first (a bad one answered without TensorFlow), then the variables
    from the parsed --verbose, then TensorFlow once, then run(); --plan_only reads its plan
    without TensorFlow, nor does a tool that needs none."""
    imports = []
    monkeypatch.setattr(flags, "import_tensorflow", lambda verbose: imports.append(verbose))

    def parse(argv):
        parser = flags.Parser()
        parser.add_argument("--plan_only", action="store_true")
        args = parser.parse_args([a for a in argv if a != "--bad"])
        if "--bad" in argv:
            raise flags.FlagError("--bad: expected nothing")
        return args

    def run(args):
        assert os.environ["TF_CPU_ALLOCATOR_USE_BFC"] == "true"
        return len(imports)

    assert flags.run_main(parse, run, ["--bad", "--verbose"]) == 2 and imports == []
    assert "TF_CPP_MIN_LOG_LEVEL" not in os.environ  # nothing set before the flags were good
    assert flags.run_main(parse, run, ["--plan_only"]) == 0 and imports == []
    assert flags.run_main(parse, run, []) == 1 and imports == [False]
    assert flags.run_main(parse, run, ["--verbose"]) == 2 and imports == [False, True]
    assert flags.run_main(parse, run, ["--verb"], needs_tensorflow=False) == 2  # abbreviated
    assert imports == [False, True]


@pytest.mark.e2e
def test_keras_finds_scikit_learn_after_a_fresh_start():
    """Issue 52: nothing is hidden from Python while TensorFlow imports, so Keras' scikit-learn
    wrapper works in a command's process (the old start-up's import hook made Keras take
    scikit-learn as not installed for the rest of the process). A fresh interpreter: the start
    step must be what imports TensorFlow and Keras first, which pytest's process has done."""
    code = ("from albert.cli.quiet_start import import_tensorflow, start_environment\n"
            "start_environment(False)\n"
            "import_tensorflow(False)\n"
            "import keras\n"
            "keras.wrappers.SKLearnClassifier(model=lambda X, y: None)\n"
            "import sklearn\n"
            "print('ok', sklearn.__name__)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["ok", "sklearn"]
    assert proc.stderr == ""  # TensorFlow's start-up lines captured and dropped
