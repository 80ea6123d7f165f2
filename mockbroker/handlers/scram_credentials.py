"""DescribeUserScramCredentials (key 50, v0) and AlterUserScramCredentials (key 51, v0):
the SCRAM credentials of the metadata log (mockbroker.cluster.credentials).

As in KRaft, Describe answers from the receiving broker's own image, and Alter goes through
the controller (cluster.credentials, scram_control.py): it is checked against the
credentials at the log end and its accepted changes are one atomic batch of
UserScramCredentialRecords / RemoveUserScramCredentialRecords.

As Kafka: Describe with no (or an empty) user list names every user that has SCRAM
credentials; a named user without any is RESOURCE_NOT_FOUND, a user named twice
DUPLICATE_RESOURCE. Alter takes salted passwords (the client salts; the broker derives
StoredKey and ServerKey and never sees a password) and refuses per user, leaving the
others to apply: a user altered twice in one request (DUPLICATE_RESOURCE), an empty name,
iterations outside 4096-16384 or an empty salt or salted password
(UNACCEPTABLE_CREDENTIAL), an unknown mechanism (UNSUPPORTED_SASL_MECHANISM), deleting a
credential that does not exist (RESOURCE_NOT_FOUND). As Kafka's ScramControlManager, the
items are checked one by one, deletions first: once a user's item failed, its later items
are skipped (its first error stands); a second item for a user whose first was accepted is
DUPLICATE_RESOURCE and withdraws the first.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kafka_protocol_codec import Struct
from kafka_protocol_codec.error_codes import ErrorCode

from mockbroker.cluster.credentials import (
    MAX_ITERATIONS,
    MECHANISM_BY_TYPE,
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    ScramImage,
)
from mockbroker.cluster.scram_control import Upsertion
from mockbroker.handlers.context import RequestContext
from mockbroker.handlers.registry import handler


def _infos(store: ScramImage, user: str) -> list[dict[str, int]]:
    return [{"mechanism": SCRAM_MECHANISMS[m][1], "iterations": c.iterations}
            for m, c in sorted(store.scram.get(user, {}).items())]


DUPLICATE = (ErrorCode.DUPLICATE_RESOURCE,
             "A user credential cannot be altered twice in the same request")
EMPTY_NAME = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
UNKNOWN_MECHANISM = (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")


@handler(50, 0, 0)
def handle_describe_user_scram_credentials(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    store = ctx.image.scram  # the receiving broker's (possibly stale) credentials
    results: list[dict[str, Any]] = []
    if not req.users:
        for user in sorted(store.scram):
            results.append({"user": user, "error_code": ErrorCode.NONE, "error_message": None,
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
                error, message = ErrorCode.NONE, None
            results.append({"user": name, "error_code": error, "error_message": message,
                            "credential_infos": _infos(store, name) if not error else []})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "results": results}


@handler(51, 0, 0)
def handle_alter_user_scram_credentials(req: Struct, ctx: RequestContext) -> dict[str, Any]:
    store = ctx.cluster.credentials  # the controller's: the credentials at the log end
    names = dict.fromkeys([d.name for d in req.deletions] + [u.name for u in req.upsertions])
    errors: dict[str, tuple[int, str]] = {}
    deletions: dict[str, tuple[str, str]] = {}
    upsertions: dict[str, Upsertion] = {}
    for deletion in req.deletions:
        if deletion.name in errors:
            continue
        if deletions.pop(deletion.name, None) is not None:
            errors[deletion.name] = DUPLICATE
            continue
        mechanism = MECHANISM_BY_TYPE.get(deletion.mechanism)
        if not deletion.name:
            errors[deletion.name] = EMPTY_NAME
        elif mechanism is None:
            errors[deletion.name] = UNKNOWN_MECHANISM
        elif store.scram_credential(deletion.name, mechanism) is None:
            errors[deletion.name] = (ErrorCode.RESOURCE_NOT_FOUND,
                                     "Attempt to delete a user credential that does not exist")
        else:
            deletions[deletion.name] = (deletion.name, mechanism)
    for upsertion in req.upsertions:
        if upsertion.name in errors:
            continue
        if (deletions.pop(upsertion.name, None) is not None
                or upsertions.pop(upsertion.name, None) is not None):
            errors[upsertion.name] = DUPLICATE
            continue
        mechanism = MECHANISM_BY_TYPE.get(upsertion.mechanism)
        if not upsertion.name:
            errors[upsertion.name] = EMPTY_NAME
        elif mechanism is None:
            errors[upsertion.name] = UNKNOWN_MECHANISM
        elif upsertion.iterations < MIN_ITERATIONS:
            errors[upsertion.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        elif upsertion.iterations > MAX_ITERATIONS:
            errors[upsertion.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        elif not upsertion.salt or not upsertion.salted_password:
            errors[upsertion.name] = (ErrorCode.UNACCEPTABLE_CREDENTIAL,
                                      "Salt and salted password must not be empty")
        else:
            upsertions[upsertion.name] = Upsertion(upsertion.name, mechanism,
                                                   upsertion.iterations, bytes(upsertion.salt),
                                                   bytes(upsertion.salted_password))
    store.alter(list(deletions.values()), list(upsertions.values()))
    results = [{"user": name, "error_code": errors.get(name, (ErrorCode.NONE, None))[0],
                "error_message": errors.get(name, (ErrorCode.NONE, None))[1]}
               for name in names]
    return {"throttle_time_ms": 0, "results": results}
