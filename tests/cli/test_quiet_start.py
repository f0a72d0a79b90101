"""albert.cli.quiet_start: TensorFlow's start-up lines hidden, and what that hides still
seen when it matters. A stand-in module writes to file descriptor 2 as TensorFlow's C++ start-up
does, in this process (pytest's capfd captures that descriptor)."""

import sys

import pytest

from albert.cli.quiet_start import quiet_start

NOISE = "oneDNN custom operations are on (a C++ line, before any log level applies)"
BROKEN = "libcudart.so.12: cannot open shared object file: No such file or directory"


@pytest.fixture
def stand_in(tmp_path, monkeypatch):
    """Two modules written as TensorFlow's start-up writes: one imports, one fails; imported
    afresh in each test, with quiet_start's finder and variables undone after it."""
    (tmp_path / "noisy_ok.py").write_text(f"import os\nos.write(2, b'{NOISE}\\n')\n")
    (tmp_path / "noisy_broken.py").write_text(
        f"import os\nos.write(2, b'{BROKEN}\\n')\n"
        "raise ImportError('the start-up failed: see above')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    for name in ("noisy_ok", "noisy_broken"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    for name in ("TF_CPP_MIN_LOG_LEVEL", "TRANSFORMERS_VERBOSITY", "ALBERT_SHOW_START_UP"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_start_up_lines_are_hidden(stand_in, capfd):
    quiet_start(False, module="noisy_ok")
    import noisy_ok  # noqa: F401

    assert capfd.readouterr().err == ""


def test_a_failing_import_shows_its_real_error(stand_in, capfd):
    """What the import wrote before it failed is the cause: printed, then its Python error."""
    quiet_start(False, module="noisy_broken")
    with pytest.raises(ImportError, match="the start-up failed"):
        import noisy_broken  # noqa: F401
    assert capfd.readouterr().err == f"{BROKEN}\n"


@pytest.mark.parametrize("show", ["1", "yes"])
def test_the_variable_shows_the_hidden_lines(stand_in, capfd, show):
    stand_in.setenv("ALBERT_SHOW_START_UP", show)
    quiet_start(False, module="noisy_ok")
    import noisy_ok  # noqa: F401

    assert capfd.readouterr().err == f"{NOISE}\n"


def test_verbose_shows_them_too(stand_in, capfd):
    quiet_start(True, module="noisy_ok")
    import noisy_ok  # noqa: F401

    assert capfd.readouterr().err == f"{NOISE}\n"


@pytest.fixture
def optional(stand_in, tmp_path):
    """A module that imports an optional one as Keras does (absent: None), and that optional
    module, installed."""
    (tmp_path / "extra_dep.py").write_text("LOADED = True\n")
    (tmp_path / "uses_extra.py").write_text(
        "try:\n    import extra_dep\nexcept ImportError:\n    extra_dep = None\n")
    for name in ("extra_dep", "uses_extra"):
        stand_in.delitem(sys.modules, name, raising=False)
    return stand_in


@pytest.mark.parametrize("verbose", [False, True])
def test_unused_optional_modules_look_absent_while_it_imports(optional, verbose):
    quiet_start(verbose, module="uses_extra", skip=("extra_dep",))
    import uses_extra

    assert uses_extra.extra_dep is None
    import extra_dep  # importable again afterwards

    assert extra_dep.LOADED


def test_an_optional_module_already_imported_stays(optional):
    import extra_dep

    quiet_start(False, module="uses_extra", skip=("extra_dep",))
    import uses_extra

    assert uses_extra.extra_dep is extra_dep


@pytest.mark.e2e
def test_tensorflow_starts_without_matplotlib_and_sklearn():
    """Keras takes their absence as "not installed" (a Keras that raised another error would
    fail every command here); both import normally once TensorFlow has."""
    import subprocess

    code = ("import sys\n"
            "from albert.cli.quiet_start import quiet_start\n"
            "quiet_start(False)\n"
            "import tensorflow as tf\n"
            "print(sorted(n for n in ('matplotlib', 'sklearn') if n in sys.modules))\n"
            "import matplotlib.pyplot, sklearn.metrics\n"
            "print(float(tf.reduce_sum(tf.ones([3]))), sklearn.metrics.f1_score([1, 0], [1, 0]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["[]", "3.0 1.0"]
