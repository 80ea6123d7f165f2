"""Every conformance case against mockbroker and real Kafka; the transcripts must agree,
except for the cases registered with a known reason, which must still differ.

The cases selected for the session run once, when the first of their tests asks, one at a
time: their names are their own, but ACLs granted to the shared user `alice` and
cluster-wide settings are not, so two cases at once could see each other's grants. Each
test then judges its own case's transcripts.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import tests.conformance.cases  # noqa: F401  (registers the corpus)
from mockbroker.handlers import advertised_versions
from mockbroker.versions import caps_for
from tests.conformance.harness import Session, Target
from tests.conformance.normalize import differences
from tests.conformance.registry import CASES, Case
from tests.conformance.report import RESULTS, Outcome

CASE_TIMEOUT = 60.0
Transcripts = tuple[list[Any], list[Any]]


async def _run(case: Case, target: Target) -> list[Any]:
    session = Session(target, case.id)
    try:
        await asyncio.wait_for(case.run(session), CASE_TIMEOUT)
    finally:
        await session.close()
    return session.transcript


async def _run_all(case_ids: list[str], ours: Target, theirs: Target
                   ) -> dict[str, Transcripts | BaseException]:
    """Each case against both targets at once, one case after another."""
    out: dict[str, Transcripts | BaseException] = {}
    for case_id in case_ids:
        case = CASES[case_id]
        try:
            mock, kafka = await asyncio.gather(_run(case, ours), _run(case, theirs))
            out[case_id] = (mock, kafka)
        except Exception as exc:  # the case's own test reports it
            out[case_id] = exc
    return out


@pytest.fixture(scope="session")
def conformance_transcripts(request: pytest.FixtureRequest,
                            conformance_targets: tuple[Target, Target]
                            ) -> dict[str, Transcripts | BaseException]:
    selected = [item.callspec.params["case_id"] for item in request.session.items
                if item.originalname == "test_conformance_case"]
    return asyncio.run(_run_all(selected, *conformance_targets))


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_conformance_case(case_id: str,
                          conformance_transcripts: dict[str, Transcripts | BaseException]
                          ) -> None:
    case = CASES[case_id]
    outcome = conformance_transcripts[case_id]
    if isinstance(outcome, BaseException):
        raise outcome
    mock, kafka = outcome
    assert mock or kafka, "a case must record something"
    found = tuple(differences(mock, kafka))
    RESULTS[case_id] = Outcome(case_id, found)
    if case.known:
        assert found, (f"{case_id} is registered as differing ({case.known}) but mockbroker "
                       "now answers as Kafka does: drop its `known` reason")
    else:
        assert not found, "mockbroker and Kafka differ:\n" + "\n".join(found)


MINIMUM_CORPUS = 300


def test_the_corpus_covers_every_advertised_api() -> None:
    """At least one case per API mockbroker advertises by default, and the corpus is at
    least MINIMUM_CORPUS cases."""
    advertised = set(advertised_api_keys())
    counted = {case.api for case in CASES.values()}
    assert sorted(advertised - counted) == []
    assert len(CASES) >= MINIMUM_CORPUS


def advertised_api_keys() -> list[int]:
    """What the default (Kafka 4.0) table advertises of the APIs mockbroker handles."""
    handled = {key: (low, high) for key, low, high in advertised_versions()}
    return sorted(key for key in caps_for(None, handled, False) if key in handled)
