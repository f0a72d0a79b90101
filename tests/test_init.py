"""The package's public names (albert/__init__.py): each export resolves to the object its module
defines, lazily, and nothing else is offered."""

import importlib
import json
import os
import runpy
import subprocess
import sys

import pytest

import albert


def test_every_public_name_is_its_modules_object():
    assert set(albert.__all__) >= {"AlbertConfig", "AlbertForPreTraining", "load_pretrained",
                                   "save_pretrained", "AlbertError", "CheckpointError"}
    for name in albert.__all__:
        module = importlib.import_module(albert._EXPORTS[name])
        assert getattr(albert, name) is getattr(module, name), name
    assert albert.CheckpointError is importlib.import_module("albert.errors").CheckpointError
    assert sorted(dir(albert)) == sorted(albert.__all__)


def test_an_unknown_name_is_an_attribute_error_naming_it():
    with pytest.raises(AttributeError, match="'from_pretrained'"):
        albert.from_pretrained  # noqa: B018 - the old entry point is gone, said by name


# What a fresh interpreter holds after each step: the albert modules loaded, and whether
# TensorFlow or Keras is. This process cannot tell (conftest has imported Keras, and a name once
# imported stays in sys.modules), hence a new interpreter.
LAZINESS_PROBE = """
import json, sys

def loaded():
    return {"albert": sorted(m for m in sys.modules if m.split(".")[0] == "albert"),
            "tensorflow": any(m.split(".")[0] in ("tensorflow", "keras") for m in sys.modules)}

steps = {}
import albert
steps["import albert"] = loaded()
error = albert.AlbertError
steps["albert.AlbertError"] = loaded()
config = albert.AlbertConfig
steps["albert.AlbertConfig"] = loaded()
steps["same objects"] = (error is sys.modules["albert.errors"].AlbertError
                         and config is sys.modules["albert.model.config"].AlbertConfig)
print(json.dumps(steps))
"""


@pytest.mark.e2e
def test_import_albert_loads_nothing_until_a_name_is_asked_for():
    """`import albert` loads no module of the package and no TensorFlow; a name loads its own
    module when first asked for, and only that (with what it imports). The names that do need
    TensorFlow are left out: importing it would cost this test most of its time, and
    test_every_public_name_is_its_modules_object already resolves them. A new interpreter: this
    one has loaded the package and Keras already (LAZINESS_PROBE)."""
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(albert.__file__))}
    out = subprocess.run([sys.executable, "-c", LAZINESS_PROBE], env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    steps = json.loads(out.strip().splitlines()[-1])
    assert steps["import albert"] == {"albert": ["albert"], "tensorflow": False}
    assert steps["albert.AlbertError"] == {"albert": ["albert", "albert.errors"],
                                           "tensorflow": False}
    assert steps["albert.AlbertConfig"] == {
        "albert": ["albert", "albert.errors", "albert.model", "albert.model.config"],
        "tensorflow": False}
    assert steps["same objects"] is True


# Which CPU allocator TensorFlow made: the BFC allocator keeps statistics (the default one
# raises ValueError on most CPUs; on some, e.g. an AMD EPYC with AVX-512 BF16, TensorFlow keeps
# statistics without it, so only the BFC side is read from them). It also prints the setting
# TensorFlow started under. The process starts as a command's (albert.cli.quiet_start).
ALLOCATOR_PROBE = """
import json, os
from albert.cli.quiet_start import import_tensorflow, start_environment
start_environment(False)
tf = import_tensorflow(False)
print(os.environ.get("TF_CPU_ALLOCATOR_USE_BFC"))
x = tf.random.normal([512, 512])
y = tf.matmul(x, x)
try:
    info = tf.config.experimental.get_memory_info("CPU:0")
except ValueError:
    info = None
print(json.dumps(info))
"""


@pytest.mark.e2e
@pytest.mark.parametrize("setting", [None, "false"])
def test_tensorflow_keeps_its_cpu_buffers_unless_the_user_says_otherwise(setting):
    """A command's process makes TensorFlow use its BFC allocator on the CPU (buffers kept and
    reused, not faulted in again on every step); a value the user set is left alone. A fresh
    process per setting: TensorFlow reads the variable once, as it starts, and this process's
    TensorFlow has started already."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPU_ALLOCATOR_USE_BFC"}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(albert.__file__))
    if setting is not None:
        env["TF_CPU_ALLOCATOR_USE_BFC"] = setting
    out = subprocess.run([sys.executable, "-c", ALLOCATOR_PROBE], env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout
    *_, started_under, info = out.strip().splitlines()
    info = json.loads(info)
    if setting is None:
        assert started_under == "true"
        # x and y, 1 MiB each and both alive, at least passed through it.
        assert info is not None and info["peak"] >= 2 * 512 * 512 * 4
    else:
        # Whether TensorFlow's default allocator keeps statistics depends on the CPU: what is
        # ours to test is that TensorFlow started under the user's value.
        assert started_under == setting


def _run_init(monkeypatch, **environ):
    """albert/__init__.py's module code run afresh (as `import albert` in a new interpreter runs
    it) under `environ` (None: unset); the environment it leaves."""
    for name, value in environ.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    runpy.run_path(albert.__file__, run_name="albert_init_probe")
    return {name: os.environ.get(name) for name in environ}


def test_import_sets_keras_backend_only_where_the_user_chose_none(monkeypatch):
    """Keras must run on TensorFlow: `import albert` says so where the user said nothing."""
    assert _run_init(monkeypatch, KERAS_BACKEND=None) == {"KERAS_BACKEND": "tensorflow"}
    assert _run_init(monkeypatch, KERAS_BACKEND="jax") == {"KERAS_BACKEND": "jax"}


def test_import_leaves_the_allocator_alone(monkeypatch):
    """Issue 52: a library user's process is theirs; the allocator default is a command's
    (test_tensorflow_keeps_its_cpu_buffers_unless_the_user_says_otherwise)."""
    assert _run_init(monkeypatch, TF_CPU_ALLOCATOR_USE_BFC=None) == {
        "TF_CPU_ALLOCATOR_USE_BFC": None}
    assert _run_init(monkeypatch, TF_CPU_ALLOCATOR_USE_BFC="false") == {
        "TF_CPU_ALLOCATOR_USE_BFC": "false"}


@pytest.mark.e2e
def test_import_albert_changes_no_variable_but_the_backend():
    """`import albert` in a fresh interpreter: the environment as it was, KERAS_BACKEND aside.
    A new interpreter: this one has imported albert (and conftest set variables) already."""
    code = ("import os\nbefore = dict(os.environ)\nimport albert\n"
            "print(sorted(set(os.environ.items()) ^ set(before.items())))\n"
            "print(os.environ.get('TF_CPU_ALLOCATOR_USE_BFC'))\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("KERAS_BACKEND", "TF_CPU_ALLOCATOR_USE_BFC")}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(albert.__file__))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert out.splitlines() == ["[('KERAS_BACKEND', 'tensorflow')]", "None"]
