"""`mockbroker check`: run the history checker from a shell.

    mockbroker check [--seed N] [--duration S] [--ops N] [--faults MIX] [--partitions N]
                     [--brokers N] [--clients confluent,aiokafka,java]
                     [--java-classpath CP] [--txn-producers N]
                     [--clock system|manual]
                     [--kafka-version V] [--bootstrap HOSTS [--control-url URL]]
                     [--drain S] [--final-timeout S] [--report FILE] [--history FILE]
                     [--plan] [--from-history FILE] [--verbose]

Prints one summary line on stdout (operations, faults, anomalies by kind), progress on
stderr, and writes the JSON report (figures, anomalies with examples, the plan and the
faults as they ran) to --report. --history keeps the whole recorded history, which
--from-history checks again without running anything. --plan prints the plan the seed
gives (producers' first steps, the fault schedule, its digest) and exits: the same seed
and options give the same plan.

Exit codes: 0 no anomaly; 1 anomalies found; 2 a bad command line; 3 the workload could not
run as planned (a client failed to start, the cluster could not be reached), no anomaly
found in what it did.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

from mockbroker.check.plan import CLIENTS, KNOWN_CLIENTS, MIXES

EPILOG = """\
fault mixes:
  none         no fault (a baseline)
  elections    leader elections, also of a follower whose replication is delayed
  crashes      brokers stopped (controlled) or crashed, then started again
  metadata     metadata paused on a partition's leader while another is elected; metadata
               paused or delayed on a broker
  replication  followers' replication paused or delayed; a lagging follower elected
  network      a broker isolated (a zombie), connection resets, refused connections,
               connections closed on Produce or Fetch
  clock        jumps of the manual clock (needs --clock manual)
  all          every kind above (the clock ones with --clock manual)

exit codes:
  0 no anomaly; 1 anomalies found; 2 bad command line; 3 the workload could not run
  as planned
"""


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _clients(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in KNOWN_CLIENTS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"clients are some of {', '.join(KNOWN_CLIENTS)}, "
                                         f"got {text!r}")
    return names


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mockbroker check", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run real clients (idempotent and transactional producers, "
                    "read_committed consumers) against a cluster under a seeded fault "
                    "schedule, then check the recorded history for lost, duplicated, "
                    "reordered, aborted or half-committed data.",
        epilog=EPILOG)
    parser.add_argument("--seed", type=int, default=0, help="the plan's seed (default 0)")
    parser.add_argument("--duration", type=_positive_float, default=20.0,
                        help="seconds of writes and faults (default 20)")
    parser.add_argument("--ops", type=_positive_int, default=100_000, dest="operations",
                        help="writes at most, over all producers (default 100000)")
    parser.add_argument("--faults", choices=list(MIXES), default="all", dest="mix",
                        help="the fault mix (default all)")
    parser.add_argument("--partitions", type=_positive_int, default=4,
                        help="partitions of the topic (default 4)")
    parser.add_argument("--brokers", type=_positive_int, default=3,
                        help="brokers of the cluster started here (default 3)")
    parser.add_argument("--clients", type=_clients, default=CLIENTS,
                        help="client libraries: confluent, aiokafka, java (default "
                             "confluent,aiokafka; java needs --java-classpath)")
    parser.add_argument("--java-classpath", default=None,
                        help="class path with kafka-clients for --clients java (default: "
                             "$MOCKBROKER_CHECK_JAVA_CLASSPATH), e.g. 'build/jvm/lib/*'")
    parser.add_argument("--txn-producers", type=_positive_int, default=2,
                        help="transactional producers per client (default 2)")
    parser.add_argument("--clock", choices=("system", "manual"), default="system",
                        help="the cluster's clock: manual follows real time and jumps "
                             "past session and lag timeouts during faults")
    parser.add_argument("--kafka-version", default=None,
                        help="the Kafka release the cluster advertises (e.g. 3.9: no "
                             "transaction.version feature)")
    parser.add_argument("--bootstrap", default=None,
                        help="check an existing cluster instead of starting one")
    parser.add_argument("--control-url", default=None,
                        help="the existing cluster's control API (the READY line's "
                             "control=), needed for faults")
    parser.add_argument("--drain", type=_positive_float, default=20.0,
                        help="seconds the producers get to finish after the writes stop")
    parser.add_argument("--final-timeout", type=_positive_float, default=30.0,
                        help="seconds the final read may take")
    parser.add_argument("--report", default=None,
                        help="the JSON report's file (default mockbroker-check-SEED-MIX.json"
                             "; - for stdout)")
    parser.add_argument("--history", default=None, help="also keep the whole history here")
    parser.add_argument("--plan", action="store_true",
                        help="print the plan (JSON) and exit")
    parser.add_argument("--from-history", default=None,
                        help="check a kept history instead of running")
    parser.add_argument("--verbose", action="store_true",
                        help="show the clients' and the cluster's logs")
    return parser


@contextlib.contextmanager
def _quiet_logs(verbose: bool) -> Iterator[None]:
    """The run's logging: warnings to stderr, and unless `verbose` the cluster's and the
    clients' loggers silenced; their levels are restored afterwards, so a caller of `main`
    in the same process (the test suite) keeps its own logging."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    names = () if verbose else ("mockbroker", "aiokafka", "kafka")
    saved = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def _write_json(path: str, data: Any) -> None:
    text = json.dumps(data, indent=1, sort_keys=False)
    if path == "-":
        print(text)
        return
    with open(path, "w", encoding="utf-8") as out:
        out.write(text + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.mix == "clock" and args.clock != "manual":
        parser.print_usage(sys.stderr)
        print("mockbroker check: error: --faults clock needs --clock manual", file=sys.stderr)
        return 2
    from mockbroker.check.runner import Options

    options = Options(seed=args.seed, mix=args.mix, duration=args.duration,
                      operations=args.operations, partitions=args.partitions,
                      brokers=args.brokers, clients=args.clients,
                      java_classpath=args.java_classpath,
                      txn_producers=args.txn_producers, clock=args.clock,
                      kafka_version=args.kafka_version, bootstrap=args.bootstrap,
                      control_url=args.control_url, drain=args.drain,
                      final_timeout=args.final_timeout)
    if args.brokers < 3:
        options.replication_factor = args.brokers
        options.min_insync_replicas = min(2, args.brokers)
    report_path = args.report or f"mockbroker-check-{args.seed}-{args.mix}.json"
    if args.plan:
        from mockbroker.check.runner import make_options_plan

        print(json.dumps(make_options_plan(options).to_json(), indent=1))
        return 0
    if args.from_history:
        return _check_again(args.from_history, report_path)
    from mockbroker.check.runner import run

    def progress(message: str) -> None:
        print(f"mockbroker check: {message}", file=sys.stderr, flush=True)

    try:
        with _quiet_logs(args.verbose):
            result = run(options, progress)
    except ValueError as exc:
        print(f"mockbroker check: error: {exc}", file=sys.stderr)
        return 2
    _write_json(report_path, result.report)
    if args.history:
        _write_json(args.history, result.history.to_json())
    print(result.report["summary"], flush=True)
    if report_path != "-":
        progress(f"report: {report_path}")
    for error in result.errors:
        progress(f"workload: {error}")
    if result.anomalies:
        return 1
    return 3 if result.errors else 0


def _check_again(path: str, report_path: str) -> int:
    from mockbroker.check.checks import check
    from mockbroker.check.history import History
    from mockbroker.check.report import build_report

    with open(path, encoding="utf-8") as source:
        history = History.from_json(json.load(source))
    anomalies = check(history)
    report = build_report(history, anomalies)
    _write_json(report_path, report)
    print(report["summary"])
    return 1 if anomalies else 0
