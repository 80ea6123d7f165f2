"""The `mockbroker` command: start a cluster and print one READY line when it serves.

The READY line is the machine-readable readiness signal, printed once every listener
accepts connections:  READY bootstrap=HOST:PORT,HOST:PORT,... control=http://HOST:PORT
The control API (docs/control-api.md) is always served, on --control-port (default 0: a
free port, which the READY line names).
SIGINT and SIGTERM shut the cluster down cleanly.

Configuration (mockbroker.config): every option is also a MOCKBROKER_* environment variable
and a key of an optional TOML file (--config FILE); a flag beats the environment, which
beats the file, which beats the default. A bad value anywhere is one line on stderr and
exit code 2; a listener that cannot bind is one line and exit code 1.

Observability: --trace logs one line per request (mockbroker.server.trace), as text or JSON
(--log-format json, which also makes every other log line a JSON object); --trace-api
limits those lines to some APIs; the control API's GET /trace serves the last requests
(kept with --trace, or with --trace-buffer N alone). --kafka-version advertises what that
Kafka release advertised (mockbroker.versions).

Security (README "Security: listeners, TLS, SASL"): --listeners, --advertised-listeners and
--listener-security-protocol-map configure named listener sets as Kafka does
(SASL_SSL://127.0.0.1:9093), --security-protocol sets the first set's protocol; TLS uses
generated certificates unless --ssl-certfile/--ssl-keyfile are given, --ssl-client-auth is
Kafka's ssl.client.auth; --sasl-users NAME:PASSWORD,... are the SASL users. With more than
the plain default listener, the READY line adds `listener.NAME=PROTOCOL://HOST:PORT,...`
for every set, and with TLS `ssl-ca=FILE` (the CA to trust) and `ssl-dir=DIR`;
--ssl-export-dir DIR copies the generated CA and client certificate to DIR (a volume).

Persistence: --data-dir DIR keeps the cluster (metadata log, replica logs, committed
offsets, SASL users) in DIR, so a restart on the same DIR comes back with its data
(mockbroker.cluster.persistence.data_dir); a DIR that cannot be written is exit code 2.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import signal
import sys
from typing import TYPE_CHECKING

from mockbroker.config import ConfigError, HelpFormatter, Parser, resolve
from mockbroker.server.trace import MAX_BUFFER as MAX_TRACE_BUFFER
from mockbroker.versions import RELEASES as KAFKA_RELEASES

if TYPE_CHECKING:
    from mockbroker.embedded import MockCluster
    from mockbroker.server.cluster_server import ListenerConfig

GC_FIRST_GENERATION = 10_000  # allocations between young collections (Python's default: 700)

EPILOG = """\
configuration:
  Every option is also an environment variable (shown as [env ...]) and a key of the TOML
  file given with --config or MOCKBROKER_CONFIG, spelled like the option without the
  leading "--" (advertised-host = "kafka", brokers = 3, trace-api = ["Produce", "Fetch"]).
  Precedence: command line > environment > file > default. Booleans in the environment:
  true/false, 1/0, yes/no, on/off.

broker configs (as Kafka takes them):
  --server-properties FILE, then KAFKA_* variables (KAFKA_NUM_PARTITIONS=3 is
  num.partitions=3; __ is _, ___ is -), then --override KEY=VALUE; later ones win.
  Unknown keys are logged and ignored; a bad value is exit code 2.

control from a shell:
  mockbroker ctl [--url URL] VERB [VALUE ...] [NAME=VALUE ...]   (URL: MOCKBROKER_CONTROL_URL)
  e.g. mockbroker ctl elect-leader orders 0; mockbroker ctl wait group-stable billing 3

history checker:
  mockbroker check [--seed N] [--duration S] [--faults MIX] ...   (mockbroker check --help)
  real clients under a seeded fault schedule; exit code 1 when it finds an anomaly

readiness:
  Once every listener accepts connections, one line goes to stdout:
    READY bootstrap=HOST:PORT,HOST:PORT,... control=http://HOST:PORT
  The control API (GET /health, GET /state, GET /trace, POST /<verb>) is described in
  docs/control-api.md.

exit codes:
  0 stopped by SIGINT or SIGTERM; 1 a listener could not bind; 2 a bad option or
  configuration value.
"""


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {value}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _racks(text: str) -> tuple[str, ...]:
    from mockbroker.cluster.log.read_replicas import parse_racks

    return parse_racks(text)


def _replica_selector(text: str) -> str:
    from mockbroker.cluster.log.read_replicas import REPLICA_SELECTORS

    if text.strip() and text.strip() not in REPLICA_SELECTORS:
        raise argparse.ArgumentTypeError(f"class {text.strip()} could not be found (known: "
                                         f"{', '.join(REPLICA_SELECTORS)})")
    return text.strip()


def _kafka_version(text: str) -> str:
    from mockbroker.versions import UnknownKafkaVersion, normalize

    try:
        return normalize(text)
    except UnknownKafkaVersion as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _trace_buffer(text: str) -> int:
    value = _integer(text)
    if not 0 <= value <= MAX_TRACE_BUFFER:
        raise argparse.ArgumentTypeError(f"must be 0-{MAX_TRACE_BUFFER}, got {value}")
    return value


def _api_list(text: str) -> list[int]:
    """"Produce,Fetch" (names in any case, with or without dashes, or keys) -> API keys,
    parsed as the control API parses them."""
    from mockbroker.control.api import ControlError, api_keys_of

    try:
        keys = api_keys_of(text)
    except ControlError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    if not keys:
        raise argparse.ArgumentTypeError("expected one or more API names")
    return keys


def _override(text: str) -> tuple[str, str]:
    from mockbroker.kafka_properties import parse_override

    try:
        return parse_override(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def broker_properties(args: argparse.Namespace,
                      environ: dict[str, str] | None = None) -> dict[str, str]:
    """The static broker properties: --server-properties, KAFKA_* variables, --override.
    Raises ConfigError for an unreadable file or a bad value (Kafka's wording)."""
    import os

    from mockbroker.cluster.configs.broker_properties import (
        BrokerPropertyError,
        check_broker_properties,
    )
    from mockbroker.kafka_properties import PropertiesError, merge, read_properties_file

    try:
        file = read_properties_file(args.server_properties) if args.server_properties else {}
    except PropertiesError as exc:
        raise ConfigError(str(exc)) from None
    merged = merge(file, os.environ if environ is None else environ, args.override or [])
    try:
        check_broker_properties(merged)
    except BrokerPropertyError as exc:
        raise ConfigError(f"broker config: {exc}") from None
    return merged


def _listeners(text: str) -> list[ListenerConfig]:
    from mockbroker.server.cluster_server import parse_listeners

    try:
        return parse_listeners(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _named_listeners(text: str) -> str:
    """NAME://HOST:PORT,... checked now (protocols and advertised names at start)."""
    from mockbroker.server.listeners import parse_listener_bindings

    try:
        if not parse_listener_bindings(text):
            raise ValueError("no listener given (NAME://HOST:PORT)")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _protocol_map(text: str) -> str:
    from mockbroker.server.listeners import parse_protocol_map

    try:
        parse_protocol_map(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _sasl_users(text: str) -> dict[str, str]:
    from mockbroker.embedded import parse_users

    try:
        return parse_users(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _sasl_mechanisms(text: str) -> list[str]:
    from mockbroker.server.sasl import MECHANISMS

    names = [m.strip().upper() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in MECHANISMS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"expected some of {', '.join(MECHANISMS)}, got "
                                         f"{text!r}")
    return names


def _non_negative(text: str) -> int:
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="mockbroker", epilog=EPILOG, formatter_class=HelpFormatter,
        description="A Kafka broker simulator: one process, N brokers, the real wire protocol.")
    p.add_argument("--brokers", type=_positive, default=3, help="number of brokers (default 3)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=0,
                   help="first broker's port; broker i listens on PORT+i (0: free ports)")
    p.add_argument("--advertised-host", default=None,
                   help="host name advertised to clients (default: the bind address)")
    p.add_argument("--advertised-port", type=_port, default=None,
                   help="first broker's advertised port, broker i advertises PORT+i "
                        "(default: the bound port)")
    p.add_argument("--partitions", type=_positive, default=1,
                   help="partitions of auto-created topics (default 1, as num.partitions)")
    p.add_argument("--replication-factor", type=_positive, default=None,
                   help="default replication factor (default min(3, brokers))")
    p.add_argument("--min-insync-replicas", type=_positive, default=1,
                   help="min.insync.replicas default (default 1)")
    p.add_argument("--auto-create-topics", action=argparse.BooleanOptionalAction, default=True,
                   help="auto-create topics on Metadata requests (default on)")
    p.add_argument("--cluster-id", default=None, help="cluster id (default: random)")
    p.add_argument("--broker-racks", type=_racks, default=(), metavar="RACK[,RACK...]",
                   help="broker.rack of each broker in id order, e.g. r0,r1,r2 (an empty "
                        "entry: no rack); for fetch from follower (KIP-392)")
    p.add_argument("--replica-selector-class", type=_replica_selector, default="",
                   metavar="CLASS",
                   help="replica.selector.class: "
                        "org.apache.kafka.common.replica.RackAwareReplicaSelector sends "
                        "consumers to an in-sync follower in their rack (default: none, the "
                        "leader serves)")
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help="persist the cluster in DIR; a restart on DIR keeps its data "
                        "(default: memory only)")
    p.add_argument("--data-dir-fsync", action=argparse.BooleanOptionalAction, default=False,
                   help="fsync every write to --data-dir (default: rely on the page cache "
                        "and recovery, as Kafka)")
    p.add_argument("--heartbeat-interval-ms", type=_positive, default=500,
                   help="interval of the brokers' heartbeats to the controller, which carry "
                        "their applied metadata offset (default 500)")
    p.add_argument("--group-consumer-heartbeat-interval-ms", type=_positive, default=5000,
                   metavar="MS", help="KIP-848 consumer groups: the members' heartbeat "
                                      "interval (default 5000, as Kafka)")
    p.add_argument("--group-consumer-session-timeout-ms", type=_positive, default=45000,
                   metavar="MS", help="KIP-848 consumer groups: the members' session timeout "
                                      "(default 45000, as Kafka)")
    p.add_argument("--consistent-metadata", action=argparse.BooleanOptionalAction,
                   default=False,
                   help="answer Metadata, DescribeConfigs, ListGroups and DescribeCluster "
                        "only up to the lowest metadata offset every broker acknowledged "
                        "(default off)")
    p.add_argument("--client-telemetry", action=argparse.BooleanOptionalAction,
                   default=False,
                   help="advertise KIP-714 client telemetry (GetTelemetrySubscriptions, "
                        "PushTelemetry) from the start, as Kafka does with a client-telemetry "
                        "metrics reporter; a set-telemetry-subscription turns it on too "
                        "(default off)")
    p.add_argument("--authorizer", action=argparse.BooleanOptionalAction, default=False,
                   help="authorize every request by ACLs with Kafka's StandardAuthorizer "
                        "semantics (Kafka's authorizer.class.name; default off: everything "
                        "is allowed and the ACL APIs answer SECURITY_DISABLED)")
    p.add_argument("--super-users", default="", metavar="PRINCIPALS",
                   help="principals allowed everything, separated by semicolons "
                        "(Kafka's super.users, e.g. 'User:admin;User:bob')")
    p.add_argument("--allow-everyone-if-no-acl-found", action=argparse.BooleanOptionalAction,
                   default=False,
                   help="allow an action on a resource no ACL names (Kafka's "
                        "allow.everyone.if.no.acl.found; default off)")
    p.add_argument("--scenario", default=None, metavar="FILE",
                   help="a scenario (.json, .toml, .yaml): seed topics and data, then timed or "
                        "triggered fault steps (docs/control-api.md); its seed is printed "
                        "on stderr")
    p.add_argument("--scenario-seed", type=_integer, default=None, metavar="N",
                   help="the seed of the scenario's random draws, to replay a run (default: "
                        "the file's seed, else a random one)")
    p.add_argument("--clock", default="system", choices=["system", "manual"], type=str.lower,
                   help="system: wall time; manual: time moves only with the control API's "
                        "advance-clock, so session, transaction and metadata-delay timeouts "
                        "fire on demand (default system)")
    p.add_argument("--control-port", type=_port, default=0,
                   help="HTTP control API port (default 0: a free port, shown on the READY "
                        "line)")
    p.add_argument("--control-host", default=None,
                   help="HTTP control API bind address (default: --host)")
    p.add_argument("--fault-seed", type=_integer, default=0,
                   help="seed of the random draws of probabilistic faults (default 0)")
    p.add_argument("--log-level", default="WARNING",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
                   type=str.upper, help="log level (default WARNING)")
    # -- extra listener sets (Docker: the host's listener next to the compose network's) --
    p.add_argument("--extra-listeners", type=_listeners, default=None,
                   metavar="HOST:PORT[/ADV_HOST[:ADV_PORT]][,...]",
                   help="more listener sets, comma separated: broker i also listens on "
                        "HOST:PORT+i and, to clients that connect there, advertises "
                        "ADV_HOST:ADV_PORT+i (default: the bind host and the bound port), as "
                        "Kafka's named listeners do; e.g. 0.0.0.0:19092/localhost:19092")
    # -- security: named listeners, TLS, SASL --
    p.add_argument("--listeners", type=_named_listeners, default=None,
                   metavar="NAME://HOST:PORT[,...]",
                   help="named listener sets as Kafka's listeners, e.g. "
                        "SASL_SSL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092: broker i binds "
                        "PORT+i; the first set is the registered one (replaces --host/--port)")
    p.add_argument("--advertised-listeners", default=None,
                   metavar="NAME://HOST[:PORT][,...]",
                   help="what each named set advertises, as Kafka's advertised.listeners "
                        "(broker i: PORT+i; default: the bind host and the bound port)")
    p.add_argument("--listener-security-protocol-map", type=_protocol_map, default=None,
                   metavar="NAME:PROTOCOL[,...]",
                   help="security protocol of each named set (PLAINTEXT, SSL, "
                        "SASL_PLAINTEXT, SASL_SSL); a set named after a protocol uses it")
    p.add_argument("--security-protocol", default=None, type=str.upper,
                   choices=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
                   help="security protocol of the first listener set (default PLAINTEXT)")
    p.add_argument("--sasl-users", type=_sasl_users, default=None,
                   metavar="NAME:PASSWORD[,...]",
                   help="SASL users, each for PLAIN and SCRAM-SHA-256/512 (stored salted)")
    p.add_argument("--sasl-mechanisms", type=_sasl_mechanisms, default=None,
                   metavar="MECHANISM[,...]",
                   help="enabled SASL mechanisms (default PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,"
                        "OAUTHBEARER)")
    p.add_argument("--connections-max-reauth-ms", type=_non_negative, default=0,
                   help="KIP-368 session lifetime of SASL connections; 0: none (default 0)")
    p.add_argument("--ssl-certfile", default=None, metavar="FILE",
                   help="PEM certificate of TLS listeners (default: generated, with a CA)")
    p.add_argument("--ssl-keyfile", default=None, metavar="FILE",
                   help="PEM private key of --ssl-certfile")
    p.add_argument("--ssl-cafile", default=None, metavar="FILE",
                   help="PEM CA that signs client certificates (with --ssl-certfile)")
    p.add_argument("--ssl-export-dir", default=None, metavar="DIR",
                   help="copy the generated ca.pem, client.pem and client-key.pem here at "
                        "startup (world-readable test material; e.g. a volume the host "
                        "reads)")
    p.add_argument("--ssl-client-auth", default="none", type=str.lower,
                   choices=["none", "requested", "required"],
                   help="Kafka's ssl.client.auth: ask for client certificates (default none)")
    # -- version emulation, observability, configuration --
    p.add_argument("--kafka-version", type=_kafka_version, default=None, metavar="VERSION",
                   help="advertise in ApiVersions only what this Kafka release advertised "
                        f"({', '.join(KAFKA_RELEASES)}; default: 4.0; 'all': every "
                        "version mockbroker handles, for clients older than KIP-896)")
    p.add_argument("--trace", action=argparse.BooleanOptionalAction, default=False,
                   help="log one line per request and response: API, version, client id, "
                        "correlation id, broker, latency, error codes (default off)")
    p.add_argument("--trace-api", type=_api_list, default=None, metavar="API[,API...]",
                   help="trace lines only for these APIs, e.g. Produce,Fetch (default all)")
    p.add_argument("--trace-buffer", type=_trace_buffer, default=0, metavar="N",
                   help="keep the last N requests for the control API's GET /trace "
                        "(default 1000 with --trace, otherwise 0: off)")
    p.add_argument("--log-format", default="pretty", choices=["pretty", "json"],
                   type=str.lower, help="log lines as text or one JSON object each "
                                        "(default pretty)")
    # -- static broker properties, as a Kafka broker takes them (mockbroker.kafka_properties)
    p.add_argument("--server-properties", default=None, metavar="FILE",
                   help="a Kafka server.properties file of static broker configs "
                        "(Java properties syntax); KAFKA_* variables and --override win over "
                        "it")
    p.add_argument("--override", action="append", type=_override, default=None,
                   metavar="KEY=VALUE",
                   help="a static broker config, e.g. group.min.session.timeout.ms=1000 "
                        "(repeatable; TOML: an [override] table)")
    p.add_argument("--config", default=None, metavar="FILE",
                   help="a TOML file of option values, keyed like the options without the "
                        "leading -- (see below)")
    return p


async def _serve(args: argparse.Namespace) -> int:
    from mockbroker.cluster import ClusterConfig
    from mockbroker.cluster.groups.consumer_groups import ConsumerGroupConfig
    from mockbroker.embedded import MockCluster

    properties = args.broker_properties
    if "default.replication.factor" in properties:  # a property beats the dedicated flag
        args.replication_factor = int(properties["default.replication.factor"])
    if args.replication_factor is not None and args.replication_factor > args.brokers:
        print(f"mockbroker: error: --replication-factor {args.replication_factor} exceeds --brokers "
              f"{args.brokers}", file=sys.stderr)
        return 2
    config = ClusterConfig(brokers=args.brokers, default_partitions=args.partitions,
                           default_replication_factor=args.replication_factor,
                           auto_create_topics=args.auto_create_topics,
                           min_insync_replicas=args.min_insync_replicas,
                           heartbeat_interval_ms=args.heartbeat_interval_ms,
                           consistent_metadata=args.consistent_metadata,
                           client_telemetry=args.client_telemetry,
                           broker_racks=args.broker_racks,
                           replica_selector_class=args.replica_selector_class,
                           broker_properties=dict(properties),
                           authorizer=args.authorizer, super_users=args.super_users,
                           allow_everyone_if_no_acl_found=args.allow_everyone_if_no_acl_found,
                           data_dir=args.data_dir or None,  # "": memory (compose's default)
                           data_dir_fsync=args.data_dir_fsync)
    if args.cluster_id:
        config.cluster_id = args.cluster_id
    config.consumer_group = ConsumerGroupConfig(
        heartbeat_interval_ms=args.group_consumer_heartbeat_interval_ms,
        session_timeout_ms=args.group_consumer_session_timeout_ms)
    clock = None
    if args.clock == "manual":
        from mockbroker.cluster import ManualClock, SystemClock

        clock = ManualClock(SystemClock().now_ms())  # starts at the wall time, then waits
    try:
        mock = MockCluster(
            config=config, clock=clock, host=args.host, port=args.port,
            advertised_host=args.advertised_host, advertised_port=args.advertised_port,
            extra_listeners=args.extra_listeners, kafka_version=args.kafka_version,
            control_port=args.control_port, control_host=args.control_host,
            fault_seed=args.fault_seed, trace=args.trace,
            trace_buffer=args.trace_buffer or None, trace_api=args.trace_api,
            listeners=args.listeners, advertised_listeners=args.advertised_listeners,
            listener_security_protocol_map=args.listener_security_protocol_map,
            security_protocol=args.security_protocol, sasl_users=args.sasl_users,
            sasl_mechanisms=args.sasl_mechanisms,
            connections_max_reauth_ms=args.connections_max_reauth_ms,
            ssl_certfile=args.ssl_certfile, ssl_keyfile=args.ssl_keyfile,
            ssl_cafile=args.ssl_cafile, ssl_client_auth=args.ssl_client_auth)
    except ValueError as exc:
        print(f"mockbroker: error: {exc}", file=sys.stderr)
        return 2
    try:
        await mock.start(wait_for_control=False)  # HTTP as soon as aiohttp is loaded
    except OSError as exc:
        print(f"mockbroker: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # TLS files that cannot be loaded
        print(f"mockbroker: error: {exc}", file=sys.stderr)
        return 2
    if args.ssl_export_dir is not None:
        try:
            export_tls_files(mock, args.ssl_export_dir)
        except (OSError, ValueError) as exc:
            print(f"mockbroker: error: --ssl-export-dir: {exc}", file=sys.stderr)
            await mock.stop()
            return 1
    if args.scenario is not None:
        from mockbroker.control.api import ControlError

        try:
            started = await mock.control.load_scenario(path=args.scenario,
                                                       seed=args.scenario_seed)
        except ControlError as exc:
            print(f"mockbroker: error: {exc.message}", file=sys.stderr)
            await mock.stop()
            return 2
        print(f"mockbroker: scenario {args.scenario} started with seed {started['seed']} "
              f"(replay: --scenario-seed {started['seed']})", file=sys.stderr, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"READY bootstrap={mock.bootstrap_servers} control={mock.control_url}"
          f"{ready_security_fields(mock)}", flush=True)
    # `python -m mockbroker` starts with collection off (mockbroker/__main__.py). What start-up
    # made stays alive: frozen, full collections never walk it again. Each request makes a few
    # dozen short-lived containers: a larger first generation collects them less often.
    gc.freeze()
    gc.set_threshold(GC_FIRST_GENERATION, *gc.get_threshold()[1:])
    gc.enable()
    await stop.wait()
    await mock.stop()
    return 0


def export_tls_files(mock: MockCluster, directory: str) -> None:
    """Copy the generated CA and client certificate where a client outside the process
    reads them (a container's volume): the temporary directory goes when the process ends."""
    import shutil

    files = mock.tls_files
    if files is None or files.directory is None:
        raise ValueError("no generated TLS files (no SSL or SASL_SSL listener, or "
                         "--ssl-certfile given)")
    os.makedirs(directory, exist_ok=True)
    for name in ("ca.pem", "client.pem", "client-key.pem"):
        target = os.path.join(directory, name)
        shutil.copyfile(os.path.join(files.directory, name), target)
        os.chmod(target, 0o644)


def ready_security_fields(mock: MockCluster) -> str:
    """` listener.NAME=PROTOCOL://BOOTSTRAP ... [ssl-ca=FILE ssl-dir=DIR]`, or "" for the
    single plain listener."""
    table = mock.server.listener_table()
    if len(table) == 1 and table[0]["security_protocol"] == "PLAINTEXT":
        return ""
    fields = [f" listener.{row['name']}={row['security_protocol']}://{row['bootstrap']}"
              for row in table]
    files = mock.tls_files
    if files is not None and files.ca is not None:
        fields.append(f" ssl-ca={files.ca}")
    if files is not None and files.directory is not None:
        fields.append(f" ssl-dir={files.directory}")
    return "".join(fields)


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if words[:1] == ["ctl"]:  # the control API's command-line client (mockbroker.ctl)
        from mockbroker.ctl import main as ctl_main

        return ctl_main(words[1:])
    if words[:1] == ["check"]:  # the history checker (mockbroker.check)
        from mockbroker.check.cli import main as check_main

        return check_main(words[1:])
    parser = build_parser()
    try:
        args = resolve(parser, argv)
        args.broker_properties = broker_properties(args)
    except ConfigError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    from mockbroker import logs

    logs.setup(args.log_level, args.log_format, trace=args.trace)
    try:
        import uvloop

        return uvloop.run(_serve(args))
    except ImportError:
        return asyncio.run(_serve(args))


if __name__ == "__main__":
    sys.exit(main())
