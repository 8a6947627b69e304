"""defaults.json (which Rollout Lab reads too) and the typed records the trainer reads
(SftParams, GrpoParams, ServeParams) must agree: the same names, types and values."""

import dataclasses
import typing

import pytest

from rollout_trainer.hparams import CHOICES, KINDS, PARAMS, reference_defaults, resolve_hparams


def _fits(annotation: typing.Any, value: typing.Any) -> bool:
    """Whether a defaults.json value has the record field's type (JSON 1 is an int, 1.0 a float)."""
    if typing.get_origin(annotation) is typing.Literal:
        return isinstance(value, str) and value in typing.get_args(annotation)
    if typing.get_origin(annotation) is list:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return type(value) is annotation


@pytest.mark.parametrize("kind", KINDS)
def test_each_kinds_record_has_the_names_types_and_values_of_defaults_json(kind):
    record_type = PARAMS[kind]
    defaults = reference_defaults(kind)
    names = [f.name for f in dataclasses.fields(record_type)]
    assert set(names) == set(defaults), (f"only in {record_type.__name__}: {sorted(set(names) - set(defaults))}; "
                                         f"only in defaults.json: {sorted(set(defaults) - set(names))}")
    hints = typing.get_type_hints(record_type)
    record = record_type()
    for name, value in defaults.items():
        assert _fits(hints[name], value), f"{kind}.{name}: defaults.json has {value!r}, the record's field is {hints[name]}"
        assert getattr(record, name) == value, f"{kind}.{name}: defaults.json has {value!r}, {record_type.__name__} {getattr(record, name)!r}"
    assert resolve_hparams(kind, {}) == record


def test_the_word_settings_accept_exactly_their_literal_types_words():
    hints = typing.get_type_hints(PARAMS["serve"])
    for name, words in CHOICES.items():
        assert typing.get_args(hints[name]) == words
