"""The `mockbroker` command: start a cluster and print one READY line when it serves.

The READY line is the machine-readable readiness signal, printed once every listener
accepts connections:  READY bootstrap=HOST:PORT,HOST:PORT,... control=http://HOST:PORT
The control API (docs/control-api.md) is always served, on --control-port (default 0: a
free port, which the READY line names).
SIGINT and SIGTERM shut the cluster down cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys


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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mockbroker",
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
    p.add_argument("--heartbeat-interval-ms", type=_positive, default=500,
                   help="interval of the brokers' heartbeats to the controller, which carry "
                        "their applied metadata offset (default 500)")
    p.add_argument("--consistent-metadata", action=argparse.BooleanOptionalAction,
                   default=False,
                   help="answer Metadata, DescribeConfigs, ListGroups and DescribeCluster "
                        "only up to the lowest metadata offset every broker acknowledged "
                        "(default off)")
    p.add_argument("--control-port", type=_port, default=0,
                   help="HTTP control API port (default 0: a free port, shown on the READY "
                        "line)")
    p.add_argument("--control-host", default=None,
                   help="HTTP control API bind address (default: --host)")
    p.add_argument("--fault-seed", type=int, default=0,
                   help="seed of the random draws of probabilistic faults (default 0)")
    p.add_argument("--log-level", default="WARNING",
                   choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
                   type=str.upper, help="log level (default WARNING)")
    return p


async def _serve(args: argparse.Namespace) -> int:
    from mockbroker.cluster import ClusterConfig
    from mockbroker.control.api import ControlAPI
    from mockbroker.control.http import ControlHTTPServer
    from mockbroker.server.cluster_server import ClusterServer, ListenerConfig

    if args.replication_factor is not None and args.replication_factor > args.brokers:
        print(f"mockbroker: --replication-factor {args.replication_factor} exceeds --brokers "
              f"{args.brokers}", file=sys.stderr)
        return 2
    config = ClusterConfig(brokers=args.brokers, default_partitions=args.partitions,
                           default_replication_factor=args.replication_factor,
                           auto_create_topics=args.auto_create_topics,
                           min_insync_replicas=args.min_insync_replicas,
                           heartbeat_interval_ms=args.heartbeat_interval_ms,
                           consistent_metadata=args.consistent_metadata)
    if args.cluster_id:
        config.cluster_id = args.cluster_id
    server = ClusterServer(config, ListenerConfig(args.host, args.port, args.advertised_host,
                                                  args.advertised_port))
    control = ControlHTTPServer(ControlAPI(server, seed=args.fault_seed),
                                args.control_host or args.host, args.control_port)
    try:
        await server.start()
    except OSError as exc:
        print(f"mockbroker: {exc.strerror or exc}", file=sys.stderr)
        return 1
    try:
        await control.start(wait=False)  # listening now; HTTP as soon as aiohttp is loaded
    except OSError as exc:
        print(f"mockbroker: control API cannot listen on port {args.control_port}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        await server.stop()
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"READY bootstrap={server.bootstrap_servers} control={control.url}", flush=True)
    await stop.wait()
    await control.stop()
    await server.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        import uvloop

        return uvloop.run(_serve(args))
    except ImportError:
        return asyncio.run(_serve(args))


if __name__ == "__main__":
    sys.exit(main())
