"""Issue 52 point 3: a RunSpec goes to JSON and back whole (every task, every field), a serialised
spec of another shape is one line naming the entry, and the run's identity is what the spec's
field declarations say, the same set a resume compares."""

import dataclasses
import enum
import json
import os
import sys
import types
import typing

import pytest

from albert.errors import AlbertError, CheckpointError
from albert.model.config import AlbertConfig
from albert.tasks.classifier_options import ClassifierOptions
from albert.tasks.pretraining_options import PretrainingOptions
from albert.tasks.squad_options import SquadOptions
from albert.train.run_spec import (
    DERIVED,
    MAY_CHANGE,
    RUN_FIELD,
    Data,
    RunSpec,
    SpecError,
    TaskOptions,
    check_resume,
    identity,
)


def other_value(tp, default, where: str, depth: int = 0):
    """A value of type `tp` that differs from `default`. A field of a type this does not know
    fails here: a field added without thought for its JSON form does not pass unnoticed."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        # Skip a RunSpec nested too deep, but never leave a field at its default.
        if type(None) in args and default is not None:
            return None
        return other_value(options[0], default, where, depth)
    if tp is bool:
        return not default
    if tp is int:
        return (default or 0) + 7
    if tp is float:
        return (default or 0.0) + 0.125
    if tp is str:
        return f"{default or ''}-{where}"
    if origin is tuple:
        return ("first", "second") if args[-1] is Ellipsis else tuple(
            other_value(a, None, f"{where}[{i}]", depth) for i, a in enumerate(args))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return next(m for m in tp if m != default)
    if tp is RunSpec and depth > 0:
        raise AssertionError(f"{where}: a RunSpec nested twice")
    if tp is TaskOptions or (isinstance(tp, type) and issubclass(tp, TaskOptions)):
        tp = SquadOptions if tp is TaskOptions else tp
    if dataclasses.is_dataclass(tp):
        return whole(tp, where, depth + (tp is RunSpec))
    raise AssertionError(f"{where}: no test value for a field of type {tp!r}; give it one here "
                         "and a JSON form in albert.train.run_spec (_to_data/_from_data)")


def whole(cls, where: str = "", depth: int = 0, **given):
    """An instance of the dataclass `cls` with every field off its default."""
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in given:
            values[f.name] = given[f.name]
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
        values[f.name] = other_value(hints[f.name], default, f"{where}.{f.name}", depth)
    return cls(**values)


OPTIONS = {
    "pretraining": PretrainingOptions,
    "squad": SquadOptions,
    "classification": ClassifierOptions,
    "regression": ClassifierOptions,
}


@pytest.mark.parametrize("task", sorted(OPTIONS))
def test_every_field_of_every_task_goes_to_json_and_back(task):
    options = whole(OPTIONS[task], "options")
    spec = whole(RunSpec, "spec", task=task, options=options)
    for obj in (spec, spec.model, spec.optimization, spec.batching, spec.execution,
                spec.outputs, spec.data, options):
        for f in dataclasses.fields(obj):
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            if default is not dataclasses.MISSING:
                assert getattr(obj, f.name) != default, (type(obj).__name__, f.name)
    text = json.dumps(spec.to_dict())  # JSON-safe: no tuple, path or object left in it
    assert RunSpec.from_dict(json.loads(text)) == spec
    assert RunSpec.from_dict(json.loads(text)).to_dict() == spec.to_dict()


def test_the_defaults_go_to_json_and_back():
    for task, cls in OPTIONS.items():
        spec = RunSpec(task=task, options=cls())
        assert RunSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(extra=1), r"^spec \(RunSpec\): unknown extra$"),
    (lambda d: d.pop("task"), r"^spec \(RunSpec\): missing task$"),
    (lambda d: d["optimization"].update(lr=1, momentum=0) or d["optimization"].pop("seed", 0),
     r"^spec\.optimization \(Optimization\): unknown lr, momentum$"),
    (lambda d: d["execution"].update(seed="42"), r"^spec\.execution\.seed: expected int, got "
                                                 r"'42'$"),
    (lambda d: d["execution"].update(eager=1), r"^spec\.execution\.eager: expected bool"),
    (lambda d: d["options"].update({"class": "GoneOptions"}),
     r"^spec\.options: task options 'GoneOptions' unknown here \(known: .*SquadOptions"),
    (lambda d: d["options"]["values"].pop("doc_stride"),
     r"^spec\.options \(SquadOptions\): missing doc_stride$"),
    (lambda d: d["model"].update(config_override="a=1"),
     r"^spec\.model\.config_override: expected a list, got 'a=1'$"),
])
def test_a_serialised_spec_of_another_shape_is_one_line_naming_the_entry(change, words):
    data = RunSpec(task="squad", options=SquadOptions()).to_dict()
    change(data)
    with pytest.raises(SpecError, match=words) as raised:
        RunSpec.from_dict(data)
    assert isinstance(raised.value, AlbertError) and "\n" not in str(raised.value)


def test_a_value_without_a_json_form_is_named():
    spec = RunSpec(task="squad", options=SquadOptions(), vocabulary=object())
    with pytest.raises(SpecError, match="has no JSON form"):
        spec.to_dict()


def test_paths_and_enums_take_their_json_form(tmp_path):
    import pathlib

    from albert.train.run_spec import _from_data, _to_data

    class Colour(enum.Enum):
        RED = "red"

    assert _to_data((pathlib.Path(tmp_path), Colour.RED)) == [str(tmp_path), "red"]
    assert _from_data(pathlib.Path, str(tmp_path), "p") == pathlib.Path(tmp_path)
    assert _from_data(Colour, "red", "c") is Colour.RED
    with pytest.raises(SpecError, match="'blue' is no Colour"):
        _from_data(Colour, "blue", "c")


# -- the identity -----------------------------------------------------------------------------

def declared_names() -> set:
    """run.json spec entries the spec's fields declare (run_field), and the options' groups."""
    spec = RunSpec(task="squad", options=SquadOptions())
    names = set()
    for part in (spec, spec.optimization, spec.execution, spec.batching, spec.outputs,
                 spec.model, spec.data):
        for f in dataclasses.fields(part):
            declared = f.metadata.get(RUN_FIELD)
            if declared:
                names.add(declared["name"] or f.name)
    return names | {"features", "labels"}


def an_identity(spec, vocab):
    config = AlbertConfig.from_preset("tiny", vocab_size=2000)
    return identity(spec.replace(vocabulary=vocab), config=config, global_batch=32,
                    total_steps=10, data=["t (1 bytes)"])


@pytest.mark.parametrize("task", sorted(OPTIONS))
def test_the_identity_is_the_declared_fields_and_a_resume_compares_each(task, sample_vocab):
    spec = RunSpec(task=task, options=OPTIONS[task](), data=Data(train="t"))
    recorded = an_identity(spec, sample_vocab)
    assert set(recorded) == declared_names() | set(DERIVED)
    assert check_resume({"spec": recorded}, recorded, "ckpt", 3) == recorded
    for key in recorded:
        value = recorded[key]
        if isinstance(value, dict):  # one of its entries another
            value = {**value, next(iter(value)): "x"}
        changed = {**recorded, key: "x" if not isinstance(value, dict) else value}
        if key in MAY_CHANGE:
            assert check_resume({"spec": recorded}, changed, "ckpt", 3) == changed
            continue
        with pytest.raises(CheckpointError, match=rf"differs in {key}"):
            check_resume({"spec": recorded}, changed, "ckpt", 3)


@pytest.mark.parametrize("part", ["optimization", "execution", "batching", "outputs", "model",
                                  "top"])
def test_a_declared_field_changes_the_identity_and_any_other_does_not(part, sample_vocab):
    spec = RunSpec(task="squad", options=SquadOptions(), data=Data(train="t"))
    before = an_identity(spec, sample_vocab)
    obj = spec if part == "top" else getattr(spec, part)
    hints = typing.get_type_hints(type(obj), vars(sys.modules[type(obj).__module__]))
    skip = {"options", "data", "vocabulary", "plan_only"} if part == "top" else set()
    for f in dataclasses.fields(obj):
        if f.name in skip or dataclasses.is_dataclass(hints[f.name]):
            continue
        default = getattr(obj, f.name)
        value = other_value(hints[f.name], default, f.name)
        if f.name == "checkpoint_path":
            value = os.sep + "elsewhere"
        changed = dataclasses.replace(obj, **{f.name: value})
        now = an_identity(changed if part == "top" else spec.replace(**{part: changed}),
                          sample_vocab)
        declared = f.metadata.get(RUN_FIELD) is not None or (
            part == "model" and f.name in ("load_from", "checkpoint_path",
                                           "load_optimizer_state"))
        if f.name == "warmup_proportion":  # recorded only without --warmup_steps
            assert now == before
            now = an_identity(spec.replace(optimization=dataclasses.replace(
                changed, warmup_steps=None)), sample_vocab)
            assert now["warmup_proportion"] == value
        elif declared:
            assert now != before, (part, f.name)
        else:
            assert now == before, (part, f.name)
