"""The corpus: every conformance case, by id.

A case is registered with the API it is about (`api`: the key it is counted under in
docs/conformance.md) and, when mockbroker is known to answer differently from Kafka on
purpose or for now, `known`: the reason, printed in the report. A known case must still
differ (else the reason is stale and the test says so); every other case must agree.
`cases(...)` registers one case per parameter (a version, an input), its id suffixed with
`[param]`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tests.conformance.harness import Session

CaseFunction = Callable[[Session], Awaitable[None]]


@dataclass(frozen=True)
class Case:
    id: str
    api: int
    run: CaseFunction
    known: str | None = None


CASES: dict[str, Case] = {}


def _add(case: Case) -> None:
    if case.id in CASES:
        raise ValueError(f"two conformance cases are named {case.id!r}")
    CASES[case.id] = case


def case(case_id: str, *, api: int, known: str | None = None
         ) -> Callable[[CaseFunction], CaseFunction]:
    """Register one case."""
    def register(fn: CaseFunction) -> CaseFunction:
        _add(Case(case_id, api, fn, known))
        return fn
    return register


def cases(case_id: str, params: Iterable[Any], *, api: int,
          known: Callable[[Any], str | None] | str | None = None
          ) -> Callable[[Callable[[Session, Any], Awaitable[None]]], Any]:
    """Register one case per parameter: `fn(session, param)`, id `case_id[param]`."""
    def register(fn: Callable[[Session, Any], Awaitable[None]]) -> Any:
        for param in params:
            reason = known(param) if callable(known) else known

            async def run(session: Session, param: Any = param) -> None:
                await fn(session, param)

            _add(Case(f"{case_id}[{param}]", api, run, reason))
        return fn
    return register


__all__ = ["CASES", "Case", "case", "cases"]
