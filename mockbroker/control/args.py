"""Argument checks shared by the control verbs: each raises ControlError 400 naming the
argument and the value it got, so a caller sees what to fix."""

from __future__ import annotations

from typing import Any

from kafka_protocol_codec import api as api_spec
from kafka_protocol_codec import api_keys

from mockbroker.control.errors import ControlError


def integer(name: str, value: Any, minimum: int | None = None,
            maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ControlError(400, f"{name} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ControlError(400, f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ControlError(400, f"{name} must be at most {maximum}, got {value}")
    return value


def optional_integer(name: str, value: Any, minimum: int | None = None) -> int | None:
    return None if value is None else integer(name, value, minimum)


def string(name: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ControlError(400, f"{name} must be a non-empty string, got {value!r}")
    return value


def api_key(value: Any) -> int:
    """An API by key (0, "0") or by name ("Produce", "produce", "offset-for-leader-epoch")."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if value in api_keys():
            return value
        raise ControlError(400, f"unknown API key {value}")
    if isinstance(value, str):
        wanted = value.replace("-", "").replace("_", "").lower()
        for key in api_keys():
            if api_spec(key).name.lower() == wanted:
                return key
    raise ControlError(400, f"unknown API {value!r} (give a key or a name such as 'Produce')")
