"""DescribeUserScramCredentials (key 50, v0) and AlterUserScramCredentials (key 51, v0):
the SCRAM credentials of the metadata log (mockbroker.cluster.security.credentials).

As in KRaft, Describe answers from the receiving broker's own image, and Alter goes through
the controller (cluster.credentials, scram_control.py): it is checked against the
credentials at the log end and its accepted changes are one atomic batch of
UserScramCredentialRecords / RemoveUserScramCredentialRecords.

As Kafka: Describe with no (or an empty) user list names every user that has SCRAM
credentials; a named user without any is RESOURCE_NOT_FOUND, a user named twice
DUPLICATE_RESOURCE; successes carry Errors.NONE's message "". Alter takes salted passwords
(the client salts; the broker derives StoredKey and ServerKey and never sees a password)
and refuses per user, leaving the others to apply, in the order of Kafka's
ScramControlManager (deletions first, then upsertions; a user refused once is not looked
at again): a user altered twice in one request (DUPLICATE_RESOURCE), an empty name or
iterations outside 4096-16384 (UNACCEPTABLE_CREDENTIAL), an unknown mechanism
(UNSUPPORTED_SASL_MECHANISM), deleting a credential that does not exist
(RESOURCE_NOT_FOUND), an empty salted password (UNKNOWN_SERVER_ERROR: Kafka's HMAC fails on
it). Results list the deletions, the upsertions, then the refused users in the order of
Kafka's HashMap of them (mockbroker.cluster.java_order).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.java_order import java_hash_order
from mockbroker.cluster.security.credentials import (
    MAX_ITERATIONS,
    MECHANISM_BY_TYPE,
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    ScramImage,
)
from mockbroker.cluster.security.scram_control import Upsertion
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler

if TYPE_CHECKING:  # the generated request classes, for annotations only
    from kafka_protocol_codec.generated.alter_user_scram_credentials import (
        AlterUserScramCredentialsRequest,
    )
    from kafka_protocol_codec.generated.describe_user_scram_credentials import (
        DescribeUserScramCredentialsRequest,
    )


def _infos(store: ScramImage, user: str) -> list[dict[str, int]]:
    return [{"mechanism": SCRAM_MECHANISMS[m][1], "iterations": c.iterations}
            for m, c in sorted(store.scram.get(user, {}).items())]


@handler(50, 0, 0)
def handle_describe_user_scram_credentials(req: DescribeUserScramCredentialsRequest, ctx: RequestContext) -> dict[str, Any]:
    store = ctx.image.scram  # the receiving broker's (possibly stale) credentials
    results: list[dict[str, Any]] = []
    if not req.users:
        for user in sorted(store.scram):
            results.append({"user": user, "error_code": ErrorCode.NONE, "error_message": "",
                            "credential_infos": _infos(store, user)})
    else:
        counts = Counter(u.name for u in req.users)
        for name in dict.fromkeys(u.name for u in req.users):
            if counts[name] > 1:
                error, message = ErrorCode.DUPLICATE_RESOURCE, \
                    "Cannot describe SCRAM credentials for the same user twice in a single " \
                    "request"
            elif name not in store.scram:
                error, message = ErrorCode.RESOURCE_NOT_FOUND, \
                    "Attempt to describe a user credential that does not exist"
            else:
                error, message = ErrorCode.NONE, ""
            results.append({"user": name, "error_code": error, "error_message": message,
                            "credential_infos": _infos(store, name) if not error else []})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": "",
            "results": results}


@handler(51, 0, 0)
def handle_alter_user_scram_credentials(req: AlterUserScramCredentialsRequest, ctx: RequestContext) -> dict[str, Any]:
    """Kafka's ScramControlManager.alterCredentials, step by step: deletions, then
    upsertions, each skipped for a user already refused; a user met again is refused
    DUPLICATE_RESOURCE (and its earlier change dropped); the accepted changes apply."""
    store = ctx.cluster.credentials  # the controller's: the credentials at the log end
    errors: dict[str, tuple[int, str | None]] = {}
    deletions: dict[str, tuple[str, str]] = {}
    upsertions: dict[str, Upsertion] = {}
    for deletion in req.deletions:
        name = deletion.name
        if name in errors:
            continue
        if deletions.pop(name, None) is not None:
            errors[name] = DUPLICATE
            continue
        mechanism = MECHANISM_BY_TYPE.get(deletion.mechanism)
        problem = _name_and_mechanism(name, mechanism)
        if problem is None and store.scram_credential(name, mechanism or "") is None:
            problem = (ErrorCode.RESOURCE_NOT_FOUND,
                       "Attempt to delete a user credential that does not exist")
        if problem is not None:
            errors[name] = problem
        elif mechanism is not None:
            deletions[name] = (name, mechanism)
    for upsertion in req.upsertions:
        name = upsertion.name
        if name in errors:
            continue
        # both removed, as Kafka's `remove(...) != null | remove(...) != null`
        dropped = [deletions.pop(name, None), upsertions.pop(name, None)]
        if any(d is not None for d in dropped):
            errors[name] = DUPLICATE
            continue
        mechanism = MECHANISM_BY_TYPE.get(upsertion.mechanism)
        problem = _name_and_mechanism(name, mechanism)
        if problem is None and upsertion.iterations < MIN_ITERATIONS:
            problem = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif problem is None and upsertion.iterations > MAX_ITERATIONS:
            problem = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        if problem is not None:
            errors[name] = problem
        elif mechanism is not None:
            upsertions[name] = Upsertion(name, mechanism, upsertion.iterations,
                                         bytes(upsertion.salt),
                                         bytes(upsertion.salted_password))
    for name, change in list(upsertions.items()):
        if not change.salted_password:  # Kafka's HMAC refuses the empty key: an exception
            errors[name] = (ErrorCode.UNKNOWN_SERVER_ERROR, None)
            del upsertions[name]
    store.alter(list(deletions.values()), list(upsertions.values()))
    results: list[dict[str, Any]] = [
        {"user": name, "error_code": ErrorCode.NONE, "error_message": None}
        for name in [*deletions, *upsertions]]
    results += [{"user": name, "error_code": errors[name][0], "error_message": errors[name][1]}
                for name in java_hash_order(errors)]  # Kafka iterates a HashMap of them
    return {"throttle_time_ms": 0, "results": results}


DUPLICATE = (ErrorCode.DUPLICATE_RESOURCE,
             "A user credential cannot be altered twice in the same request")


def _name_and_mechanism(name: str, mechanism: str | None) -> tuple[int, str] | None:
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if mechanism is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    return None
