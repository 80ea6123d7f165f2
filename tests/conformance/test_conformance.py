"""Every conformance case against mockbroker and real Kafka; the transcripts must agree,
except for the cases registered with a known reason, which must still differ."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import tests.conformance.cases  # noqa: F401  (registers the corpus)
from tests.conformance.harness import Session, Target
from tests.conformance.normalize import differences
from tests.conformance.registry import CASES, Case
from tests.conformance.report import RESULTS, Outcome

CASE_TIMEOUT = 60.0


async def _run(case: Case, target: Target) -> list[Any]:
    session = Session(target, case.id)
    try:
        await asyncio.wait_for(case.run(session), CASE_TIMEOUT)
    finally:
        await session.close()
    return session.transcript


async def _both(case: Case, ours: Target, theirs: Target) -> tuple[list[Any], list[Any]]:
    mock, kafka = await asyncio.gather(_run(case, ours), _run(case, theirs))
    return mock, kafka


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_conformance_case(case_id: str, conformance_targets: tuple[Target, Target]) -> None:
    case = CASES[case_id]
    mock, kafka = asyncio.run(_both(case, *conformance_targets))
    assert mock or kafka, "a case must record something"
    found = tuple(differences(mock, kafka))
    RESULTS[case_id] = Outcome(case_id, found)
    if case.known:
        assert found, (f"{case_id} is registered as differing ({case.known}) but mockbroker "
                       "now answers as Kafka does: drop its `known` reason")
    else:
        assert not found, "mockbroker and Kafka differ:\n" + "\n".join(found)
