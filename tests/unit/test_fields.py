"""app.fields.same_named: a record built from others by field name."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from app.fields import field_names, same_named


@dataclass(frozen=True)
class Row:
    offer_key: str
    region: str
    price: float


@dataclass(frozen=True)
class Extra:
    region: str
    vcpus: int


@dataclass(frozen=True)
class Out:
    offer_key: str
    region: str
    vcpus: int
    note: str = "none"


class OutModel(BaseModel):
    offer_key: str
    region: str
    price: float


def test_fields_come_from_given_then_the_first_source_that_has_them() -> None:
    out = same_named(Out, Row("a100-1x", "us-east", 1.5), Extra("eu-west", 8), vcpus=16)
    # vcpus given; region from the first source (Row), not Extra; note kept at its default
    assert out == Out(offer_key="a100-1x", region="us-east", vcpus=16, note="none")
    assert same_named(Out, Extra("eu-west", 8), Row("x", "us-east", 2.0)).region == "eu-west"


def test_a_pydantic_target_is_read_by_its_model_fields() -> None:
    assert field_names(OutModel) == ["offer_key", "region", "price"]
    out = same_named(OutModel, Row("h100-8x", "ap-south", 20.0), price=19.5)
    assert out.model_dump() == {"offer_key": "h100-8x", "region": "ap-south", "price": 19.5}


def test_a_required_field_no_source_has_is_the_targets_error() -> None:
    with pytest.raises(TypeError):
        same_named(Out, Row("a", "b", 1.0))  # vcpus: no source, no default
