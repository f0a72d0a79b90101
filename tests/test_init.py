"""The package's public names (albert/__init__.py): each export resolves to the object its module
defines, lazily, and nothing else is offered."""

import importlib

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
