"""A check run's figures: the summary line and the JSON report.

The report (`build_report`) has the run's settings and plan (seed, mix, the plan's digest
and fault schedule, so the run can be replayed with the same seed), the figures (writes,
acknowledgements, transactions by outcome, reads, faults by kind, client errors by name),
the anomalies by kind, each with its count and its first examples, the faults as they ran,
and `valid`: no anomaly. Pure: no I/O.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mockbroker.check.checks import KINDS, Anomaly, by_kind
from mockbroker.check.history import FINAL_CONSUMER, TXN_OUTCOMES, History

EXAMPLES = 5  # anomalies shown per kind


def figures(history: History) -> dict[str, Any]:
    acked = {a.value for a in history.acks if a.ok}
    failed = {a.value for a in history.acks if not a.ok} - acked
    written = {w.value for w in history.writes}
    outcomes = Counter(t.outcome for t in history.txns)
    reads = [r for r in history.reads if r.consumer != FINAL_CONSUMER]
    final = [r for r in history.reads if r.consumer == FINAL_CONSUMER]
    steps = {(f.step, f.kind) for f in history.faults if f.step >= 0}
    faults = Counter(kind for _, kind in steps)
    errors = Counter(e.error.split(":", 1)[0] for e in history.client_events)
    return {
        "operations": len(history.writes) + len(history.reads),
        "writes": len(history.writes), "acked": len(acked), "failed": len(failed),
        "unanswered": len(written - acked - failed),
        "txns": len(history.txns),
        "txn_outcomes": {o: outcomes.get(o, 0) for o in TXN_OUTCOMES},
        "reads": len(reads), "final_reads": len(final),
        "faults": len(steps), "fault_verbs": len([f for f in history.faults if f.step >= 0]),
        "faults_by_kind": dict(sorted(faults.items())),
        "fault_errors": len([f for f in history.faults if f.error is not None]),
        "client_errors": dict(errors.most_common(20)),
    }


def summary_line(history: History, anomalies: list[Anomaly]) -> str:
    f = figures(history)
    meta = history.meta
    grouped = by_kind(anomalies)
    found = " ".join(f"{kind}={len(items)}" for kind, items in grouped.items()) or "none"
    txns = ", ".join(f"{n} {o}" for o, n in f["txn_outcomes"].items() if n)
    return (f"mockbroker check: seed={meta.get('seed')} faults={meta.get('mix')} "
            f"operations={f['operations']} (writes {f['writes']}: {f['acked']} acked, "
            f"{f['failed']} failed; txns {f['txns']}{': ' + txns if txns else ''}; "
            f"reads {f['reads']}, final read {f['final_reads']}) "
            f"faults={f['faults']} anomalies: {found}")


def build_report(history: History, anomalies: list[Anomaly],
                 plan: dict[str, Any] | None = None) -> dict[str, Any]:
    grouped = by_kind(anomalies)
    return {
        "valid": not anomalies,
        "summary": summary_line(history, anomalies),
        "settings": history.meta,
        "plan": plan,
        "figures": figures(history),
        "anomalies": {kind: {"count": len(items), "what": KINDS[kind],
                             "examples": [a.to_json() for a in items[:EXAMPLES]]}
                      for kind, items in grouped.items()},
        "faults": [{"at": round(e.at, 3), "step": e.step, "kind": e.kind, "verb": e.verb,
                    "args": e.args, **({"error": e.error} if e.error else {})}
                   for e in history.faults],
        "client_errors": [{"at": round(e.at, 3), "client": e.client, "error": e.error}
                          for e in history.client_events[:50]],
    }
