#!/bin/sh
# Start or stop a Docker engine for tests/docker (`make test` wraps the pytest run in both).
#
#   scripts/dockerd.sh start   when no engine answers on the default socket, start dockerd in
#                              the background and record its PID in build/dockerd/dockerd.pid
#   scripts/dockerd.sh stop    stop the dockerd that `start` started (by that PID), and only it
#   scripts/dockerd.sh status  exit 0 when an engine answers
#
# An engine that was not started here (Docker Desktop, a systemd service) is used as it is and
# never stopped; `make test` stops only an engine it started itself. dockerd needs root. It is started with the default socket and data root
# (/var/lib/docker keeps images and build cache between runs); if it does not come up, it is
# tried again with the vfs storage driver (no overlayfs, e.g. nested in another container), then
# also without iptables (no netfilter in the sandbox). Each try waits at most START_TIMEOUT
# seconds. On a Debian bookworm VM as root the first try works: overlay2, bridge, iptables.
set -eu

cd "$(dirname "$0")/.."
STATE=build/dockerd
PIDFILE=$STATE/dockerd.pid
LOG=$STATE/dockerd.log
START_TIMEOUT=${START_TIMEOUT:-30}
STOP_TIMEOUT=${STOP_TIMEOUT:-30}

engine_answers() {
    timeout 10 docker info >/dev/null 2>&1
}

try_start() {  # try_start [dockerd options...]: 0 when the engine answers in time
    echo "starting dockerd${*:+ $*} (log: $LOG)"
    dockerd --pidfile "$STATE/dockerd.self.pid" "$@" >>"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    waited=0
    while [ "$waited" -lt "$START_TIMEOUT" ]; do
        if engine_answers; then
            return 0
        fi
        if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
            echo "dockerd $* exited; the end of its log:" >&2
            tail -n 5 "$LOG" >&2
            rm -f "$PIDFILE"
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    echo "dockerd $* did not answer within ${START_TIMEOUT}s" >&2
    stop
    return 1
}

start() {
    if engine_answers; then
        echo "a Docker engine already answers: using it"
        return 0
    fi
    if ! command -v dockerd >/dev/null 2>&1; then
        echo "dockerd is not installed: run 'make sysdeps' (Debian package docker.io)" >&2
        return 1
    fi
    if [ "$(id -u)" != 0 ]; then
        echo "dockerd needs root: run as root, or start Docker yourself" >&2
        return 1
    fi
    mkdir -p "$STATE"
    try_start && return 0
    try_start --storage-driver vfs && return 0
    try_start --storage-driver vfs --iptables=false && return 0
    echo "dockerd could not start here; see $LOG" >&2
    return 1
}

stop() {
    [ -f "$PIDFILE" ] || return 0
    pid=$(cat "$PIDFILE")
    rm -f "$PIDFILE"
    # a PID file left by a run that was killed may name another process by now
    if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" != dockerd ]; then
        return 0
    fi
    echo "stopping dockerd (PID $pid)"
    kill -TERM "$pid"
    waited=0
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "$STOP_TIMEOUT" ]; do
        sleep 1
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "dockerd (PID $pid) still runs after ${STOP_TIMEOUT}s: killing it" >&2
        kill -KILL "$pid"
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) engine_answers ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
