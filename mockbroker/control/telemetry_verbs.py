"""Control verbs for client telemetry (KIP-714), mixed into ControlAPI.

Theory of operation: the verbs are thin over the cluster's ClientTelemetry
(cluster/client_telemetry/telemetry_receiver.py), which decides everything; this module validates
JSON arguments and renders the model as JSON. Verbs:

- `set-telemetry-subscription`: create or replace a named subscription (metric name
  prefixes, "*" for all; push interval; selectors such as client_id or
  client_software_name mapped to regular expressions). It turns client telemetry on, so
  ApiVersions starts advertising GetTelemetrySubscriptions and PushTelemetry: set it before
  the clients under test connect. Clients already holding a subscription get the new one on
  their next request (their next push is answered UNKNOWN_SUBSCRIPTION_ID).
- `delete-telemetry-subscription`: remove one by name.
- `telemetry`: subscriptions and client instances with what they last pushed (one client
  with `client_instance_id`, its whole kept history with `history`).
- `wait-telemetry`: block until a client (optionally with a given client id) has pushed a
  metric named `metric` (or any), and with `terminating` its terminating push
  (control/waits.py).
`state` carries `telemetry_state` as its "telemetry" section.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from mockbroker.cluster import Cluster, ClusterError
from mockbroker.cluster.client_telemetry.telemetry_receiver import (
    DEFAULT_PUSH_INTERVAL_MS,
    ClientRecord,
)
from mockbroker.control import waits
from mockbroker.control.errors import ControlError

if TYPE_CHECKING:
    from collections.abc import Awaitable

VERBS = {
    "set-telemetry-subscription": "set_telemetry_subscription",
    "delete-telemetry-subscription": "delete_telemetry_subscription",
    "telemetry": "telemetry",
    "wait-telemetry": "wait_telemetry",
}
DEFAULT_SUBSCRIPTION = "default"


def _metrics(value: Any) -> list[str]:
    """Prefixes as a list of strings or one comma-separated string ("*": everything)."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",")] if value else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ControlError(400, f"metrics must be a list of metric name prefixes or a "
                                f"comma-separated string (\"*\" for all), got {value!r}")
    return value


def _match(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ControlError(400, f"match must be an object of selector -> regular expression, "
                                f"got {value!r}")
    return value


def _name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ControlError(400, f"name must be a non-empty string, got {value!r}")
    return value


def client_json(record: ClientRecord, history: bool = False) -> dict[str, Any]:
    identity = record.identity
    out: dict[str, Any] = {
        "client_instance_id": str(identity.client_instance_id),
        "client_id": identity.client_id, "client_software_name": identity.software_name,
        "client_software_version": identity.software_version, "address": identity.address,
        "subscription_id": record.subscription_id, "requested_metrics": list(record.metrics),
        "push_interval_ms": record.push_interval_ms, "pushes": record.push_count,
        "metric_names": sorted(record.metric_names()),
    }
    if history:
        out["history"] = [p.to_json() for p in record.pushes]
    elif record.pushes:
        out["last_push"] = record.pushes[-1].to_json()
        last = record.last_metrics()
        if last is not None and record.pushes[-1].data is not last:
            out["last_metrics"] = [m.to_json() for m in last.metrics]
    return out


def telemetry_state(cluster: Cluster) -> dict[str, Any]:
    """The `state` verb's summary: switch, subscriptions, clients (no metric values)."""
    telemetry = cluster.telemetry
    return {"enabled": telemetry.enabled,
            "subscriptions": [s.to_json() for s in telemetry.subscriptions.values()],
            "clients": [{"client_instance_id": str(r.identity.client_instance_id),
                         "client_id": r.identity.client_id,
                         "client_software_name": r.identity.software_name,
                         "client_software_version": r.identity.software_version,
                         "pushes": r.push_count, "metrics": len(r.metric_names())}
                        for r in telemetry.clients.values()]}


class TelemetryVerbs:
    """The telemetry verbs; ControlAPI provides `cluster` and `_wait`."""

    cluster: Cluster

    def _wait(self, check: waits.Check, expected: str,
              timeout_ms: int | None) -> Awaitable[dict[str, Any]]:
        raise NotImplementedError  # WaitVerbs._wait, first in ControlAPI's bases

    async def set_telemetry_subscription(self, metrics: Any, interval_ms: int | None = None,
                                         match: dict[str, str] | None = None,
                                         name: str = DEFAULT_SUBSCRIPTION) -> dict[str, Any]:
        """Create or replace a subscription: metric name prefixes ("*" all, [] none), push
        interval (default 300000 ms), selectors (client_id, client_software_name, ... ->
        regular expression). Enables client telemetry."""
        prefixes, selectors, label = _metrics(metrics), _match(match), _name(name)
        interval = DEFAULT_PUSH_INTERVAL_MS if interval_ms is None else interval_ms
        if isinstance(interval, bool) or not isinstance(interval, int):
            raise ControlError(400, f"interval_ms must be an integer, got {interval_ms!r}")
        try:
            subscription = self.cluster.telemetry.set_subscription(label, prefixes, interval,
                                                                   selectors)
        except ClusterError as exc:
            raise ControlError(400, exc.message or exc.code.name) from exc
        return {"enabled": True, "subscription": subscription.to_json()}

    async def delete_telemetry_subscription(self, name: str = DEFAULT_SUBSCRIPTION
                                            ) -> dict[str, Any]:
        """Remove a subscription; clients that matched it get the rest on their next request."""
        label = _name(name)
        if not self.cluster.telemetry.delete_subscription(label):
            raise ControlError(404, f"unknown telemetry subscription {label!r}")
        return {"deleted": label}

    async def telemetry(self, client_instance_id: str | None = None,
                        history: bool = False) -> dict[str, Any]:
        """Subscriptions and client instances with their last push (decoded metrics)."""
        if not isinstance(history, bool):
            raise ControlError(400, f"history must be true or false, got {history!r}")
        telemetry = self.cluster.telemetry
        records = list(telemetry.clients.values())
        if client_instance_id is not None:
            try:
                wanted = uuid.UUID(str(client_instance_id))
            except ValueError:
                raise ControlError(400, f"client_instance_id must be a UUID, got "
                                        f"{client_instance_id!r}") from None
            record = telemetry.client(wanted)
            if record is None:
                raise ControlError(404, f"unknown client instance {client_instance_id}")
            records = [record]
        return {"enabled": telemetry.enabled,
                "subscriptions": [s.to_json() for s in telemetry.subscriptions.values()],
                "clients": [client_json(r, history) for r in records]}

    async def wait_telemetry(self, metric: str | None = None, client_id: str | None = None,
                             terminating: bool = False,
                             timeout_ms: int | None = None) -> dict[str, Any]:
        """Block until a client (with `client_id`, if given) has pushed a metric named
        `metric` (any metric if not given) and, with `terminating`, its terminating push;
        answers with that client and the last such metric."""
        name = None if metric is None else _name(metric)
        if client_id is not None and not isinstance(client_id, str):
            raise ControlError(400, f"client_id must be a string, got {client_id!r}")
        if not isinstance(terminating, bool):
            raise ControlError(400, f"terminating must be true or false, got {terminating!r}")
        who = "a client" if client_id is None else f"client {client_id!r}"
        what = "a metric" if name is None else f"metric {name!r}"
        end = " and its terminating push" if terminating else ""
        return await self._wait(waits.telemetry_pushed(self.cluster, name, client_id,
                                                       terminating),
                                f"{who} to push {what}{end}", timeout_ms)
