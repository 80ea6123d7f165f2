"""The control API's request fault verbs: inject-error, inject-latency, clear-faults.

Theory of operation: a fault is a rule in the FaultInjector (control/faults.py), which the
server consults for every request through its hooks: matching requests (by API, and
optionally broker, topic and partition) are answered with a Kafka error, dropped
(`disconnect`), or delayed, `count` times or with a probability. Every argument is checked
before the rule is added: an error is injected only into APIs whose responses carry one, and
topic filters apply to the partition-level APIs only. Connection-level faults are
control/wire_verbs.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka_protocol_codec import api as api_spec
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.control.args import api_key as _api_key
from mockbroker.control.args import integer as _int
from mockbroker.control.args import optional_integer as _opt_int
from mockbroker.control.errors import ControlError
from mockbroker.control.faults import PARTITION_APIS, Fault, FaultInjector, has_top_level_error

if TYPE_CHECKING:
    from mockbroker.cluster import PartitionImage, TopicImage

VERBS = {"inject-error": "inject_error", "inject-latency": "inject_latency",
         "clear-faults": "clear_faults"}

MAX_LATENCY_MS = 600_000


def _error_code(value: Any) -> int | None:
    """A Kafka error by name or code; None for "disconnect"."""
    if isinstance(value, str) and value.lower() == "disconnect":
        return None
    if isinstance(value, str) and value.lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            code = ErrorCode(value)
        except ValueError:
            raise ControlError(400, f"unknown Kafka error code {value}") from None
    elif isinstance(value, str):
        try:
            code = ErrorCode[value.upper().replace("-", "_")]
        except KeyError:
            raise ControlError(400, f"unknown Kafka error {value!r}") from None
    else:
        raise ControlError(400, f"error must be a Kafka error name or code, or 'disconnect', "
                                f"got {value!r}")
    if code == ErrorCode.NONE:
        raise ControlError(400, "error NONE (0) is not an error")
    return int(code)


def _probability(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ControlError(400, f"probability must be a number in (0, 1], got {value!r}")
    return float(value)


class FaultVerbs:
    """The request fault verbs; ControlAPI provides `faults` and its lookups."""

    faults: FaultInjector

    def _topic(self, topic: Any) -> TopicImage:
        raise NotImplementedError  # ControlAPI._topic

    def _partition(self, topic: Any, partition: Any) -> tuple[TopicImage, PartitionImage]:
        raise NotImplementedError  # ControlAPI._partition

    def _broker(self, broker: Any) -> int:
        raise NotImplementedError  # ControlAPI._broker

    def _fault_filters(self, broker: Any, topic: Any, partition: Any, count: Any,
                       probability: Any) -> dict[str, Any]:
        broker_id = None if broker is None else self._broker(broker)
        name = None if topic is None else self._topic(topic).name
        if partition is not None:
            if name is None:
                raise ControlError(400, "a partition filter needs a topic")
            self._partition(name, partition)
        return {"broker": broker_id, "topic": name, "partition": partition,
                "count": _opt_int("count", count, 1), "probability": _probability(probability)}

    async def inject_error(self, api: str | int, error: str | int, broker: int | None = None,
                           topic: str | None = None, partition: int | None = None,
                           count: int | None = None,
                           probability: float | None = None) -> dict[str, Any]:
        """Fail matching requests with a Kafka error (name or code) or `disconnect`."""
        key = _api_key(api)
        code = _error_code(error)
        filters = self._fault_filters(broker, topic, partition, count, probability)
        if code is not None and key not in PARTITION_APIS and not has_top_level_error(key) \
                and key != 10:
            raise ControlError(400, f"{api_spec(key).name} responses have no error code to "
                                    "inject into; use 'disconnect' or inject-latency")
        if (filters["topic"] is not None and key not in PARTITION_APIS):
            raise ControlError(400, f"topic filters apply to the partition APIs only "
                                    f"({', '.join(api_spec(k).name for k in sorted(PARTITION_APIS))})")
        fault = self.faults.add(Fault(0, "error", key, error=code, **filters))
        return fault.to_json()

    async def inject_latency(self, api: str | int, ms: int, broker: int | None = None,
                             topic: str | None = None, partition: int | None = None,
                             count: int | None = None,
                             probability: float | None = None) -> dict[str, Any]:
        """Delay matching requests by `ms` before they are handled."""
        key = _api_key(api)
        latency = _int("ms", ms, 0, MAX_LATENCY_MS)
        filters = self._fault_filters(broker, topic, partition, count, probability)
        if filters["topic"] is not None and key not in PARTITION_APIS:
            raise ControlError(400, "topic filters apply to the partition APIs only")
        fault = self.faults.add(Fault(0, "latency", key, latency_ms=latency, **filters))
        return fault.to_json()

    async def clear_faults(self, id: int | None = None) -> dict[str, Any]:
        """Remove one fault by id, or all of them."""
        fault_id = _opt_int("id", id)
        if fault_id is not None and self.faults.get(fault_id) is None:
            raise ControlError(404, f"unknown fault id {fault_id}")
        return {"cleared": self.faults.clear(fault_id)}
