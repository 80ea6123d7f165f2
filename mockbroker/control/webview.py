"""The live web view: the cluster on one page, served by the control port at GET /.

Theory of operation: the page is rendered on the server from the `state` snapshot (so it is
complete without JavaScript, and what a test sees is what `state` says), in plain HTML with
every value escaped. A few lines of JavaScript refresh the view: every REFRESH_MS they fetch
GET /view (the same HTML for the main part) and the request trace after the last sequence
number seen (GET /trace?since=N), appending new requests to the trace table as they stream
in. Buttons post control verbs (POST /<verb>) with the arguments in their data attributes,
then refresh at once; a refused verb shows its reason in the status line.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from typing import Any

REFRESH_MS = 1000
TRACE_ROWS = 50


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _button(label: str, verb: str, args: dict[str, Any], css: str = "") -> str:
    return (f'<button class="verb {css}" data-verb="{_e(verb)}" '
            f'data-args="{_e(json.dumps(args))}">{_e(label)}</button>')


def _table(css: str, headers: Iterable[str], rows: list[str], empty: str,
           element_id: str | None = None) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(rows) if rows else f'<tr><td colspan="99" class="empty">{_e(empty)}</td></tr>'
    id_attribute = "" if element_id is None else f' id="{_e(element_id)}"'
    return (f'<table{id_attribute} class="{css}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{body}</tbody></table>')


def _brokers(state: dict[str, Any]) -> str:
    rows = []
    for b in state["brokers"]:
        status = "fenced" if b["fenced"] else ("up" if b["up"] else "down")
        if b.get("refusing_connections"):
            status += " refusing connections"
        action = _button("Stop", "stop-broker", {"broker": b["id"]}) if b["up"] else \
            _button("Start", "start-broker", {"broker": b["id"]})
        if b.get("refusing_connections"):
            action += " " + _button("Accept connections", "accept-connections",
                                    {"broker": b["id"]})
        elif b["up"]:
            action += " " + _button("Refuse connections", "refuse-connections",
                                    {"broker": b["id"]})
        rows.append(f'<tr id="broker-{b["id"]}" class="{status}"><td>{b["id"]}</td>'
                    f'<td>{_e(b["endpoint"])}</td><td class="status">{status}</td>'
                    f'<td>{b["applied_offset"]}</td>'
                    f'<td>{"paused" if b["metadata_paused"] else b["metadata_delay_ms"] or ""}'
                    f'</td><td>{action}</td></tr>')
    return _table("brokers", ["id", "endpoint", "status", "metadata offset",
                              "paused / delay ms", ""], rows, "no brokers")


def _topics(state: dict[str, Any]) -> str:
    rows = []
    for name, topic in state["topics"].items():
        for p in topic["partitions"]:
            rows.append(
                f'<tr id="partition-{_e(name)}-{p["partition"]}"><td>{_e(name)}</td>'
                f'<td>{p["partition"]}</td><td class="leader">{p["leader"]}</td>'
                f'<td class="epoch">{p["leader_epoch"]}</td><td>{_e(p["replicas"])}</td>'
                f'<td>{_e(p["isr"])}</td><td>{_e(p.get("log_start_offset"))}</td>'
                f'<td>{_e(p.get("high_watermark"))}</td>'
                f'<td>{_e(p.get("last_stable_offset"))}</td>'
                f'<td>{_e(p.get("log_end_offset"))}</td>'
                f'<td class="segments">{_e(_segments_text(p.get("log")))}</td>'
                f'<td>{_button("Elect leader", "elect-leader", {"topic": name, "partition": p["partition"]}, "elect")}'
                f'</td></tr>')
    return _table("topics", ["topic", "partition", "leader", "epoch", "replicas", "ISR",
                             "log start", "HW", "LSO", "log end", "segments / bytes", ""],
                  rows, "no topics")


def _segments_text(log: dict[str, Any] | None) -> str:
    """The leader's segment count and size (and a compacted log's dirty ratio)."""
    if not log:
        return ""
    text = f'{log["segments"]} / {log["size_bytes"]}'
    return text if "dirty_ratio" not in log else f'{text} (dirty {log["dirty_ratio"]})'


def _member_text(member: dict[str, Any]) -> str:
    """A member id; for a KIP-848 member also its epoch and assigned partitions."""
    if "member_epoch" not in member:
        return str(member["member_id"])
    assigned = " ".join(f"{t}-{p}" for t, ps in member["assigned"].items() for p in ps)
    return f'{member["member_id"]} (epoch {member["member_epoch"]}: {assigned or "none"})'


def _groups(state: dict[str, Any]) -> str:
    ends = {(name, p["partition"]): p.get("high_watermark")
            for name, topic in state["topics"].items() for p in topic["partitions"]}
    rows = []
    for group_id, group in state["groups"].items():
        members = ", ".join(_member_text(m) for m in group["members"]) or "-"
        offsets = []
        for topic, parts in group["offsets"].items():
            for part, committed in parts.items():
                end = ends.get((topic, int(part)))
                lag = "" if end is None else f" (lag {end - committed['offset']})"
                offsets.append(f"{topic}-{part}: {committed['offset']}{lag}")
        rows.append(f'<tr><td>{_e(group_id)}</td><td>{_e(group["state"])}</td>'
                    f'<td>{_e(group.get("generation"))}</td><td>{_e(members)}</td>'
                    f'<td>{_e("; ".join(offsets))}</td></tr>')
    return _table("groups", ["group", "state", "generation", "members",
                             "committed offsets"], rows, "no groups")


def _producers(state: dict[str, Any]) -> str:
    rows = [f'<tr><td>{p["producer_id"]}</td><td>{p["producer_epoch"]}</td>'
            f'<td>{_e(p["topic"])}-{p["partition"]}</td><td>{p["last_sequence"]}</td>'
            f'<td>{_e(p["open_transaction_first_offset"])}</td></tr>'
            for p in state["producers"]]
    rows += [f'<tr><td>{t["producer_id"]}</td><td>{t["producer_epoch"]}</td>'
             f'<td>transaction {_e(tid)}</td><td>{_e(t["state"])}</td>'
             f'<td>{_e(t["partitions"])}</td></tr>'
             for tid, t in state["transactions"].items()]
    return _table("producers", ["producer id", "epoch", "partition / transaction",
                                "last sequence / state", "open txn first offset / partitions"],
                  rows, "no producers")


def _fault_detail(fault: dict[str, Any]) -> str:
    """The error or latency of a request fault; a connection fault's settings and filters."""
    if "error" in fault or "ms" in fault:
        return str(fault.get("error", fault.get("ms")))
    parts = [f"{name}={fault[name]}" for name in (
        "bytes_per_second", "throttled_bytes", "delay_ms", "connection", "client_id",
        "client_host", "client_port") if fault.get(name) is not None]
    if fault.get("answer"):
        parts.append("after the answer")
    return " ".join(parts)


def _faults(state: dict[str, Any]) -> str:
    rows = [f'<tr><td>{f["id"]}</td><td>{_e(f["kind"])}</td><td>{_e(f["api"])}</td>'
            f'<td>{_e(_fault_detail(f))}</td><td>{_e(f["broker"])}</td>'
            f'<td>{_e(f["topic"])}</td><td>{_e(f["partition"])}</td>'
            f'<td>{_e(f["count"])}</td><td>{f["fired"]}</td>'
            f'<td>{_button("Clear", "clear-faults", {"id": f["id"]})}</td></tr>'
            for f in state["faults"]]
    return _table("faults", ["id", "kind", "api", "error / ms / settings", "broker", "topic",
                             "partition", "remaining", "fired", ""], rows, "no faults")


def _connections(state: dict[str, Any]) -> str:
    rows = [f'<tr><td>{c["id"]}</td><td>{c["broker"]}</td>'
            f'<td>{_e(c["client_host"])}:{c["client_port"]}</td><td>{_e(c["client_id"])}</td>'
            f'<td>{c["requests"]}</td><td>{c["bytes_out"]}</td><td>{c["throttled_bytes"]}</td>'
            f'<td>{"hung" if c["hung"] else ""}</td></tr>'
            for c in state.get("connections", [])]
    return _table("connections", ["id", "broker", "client", "client id", "requests",
                                  "bytes out", "paced bytes", ""], rows, "no connections")


def _listeners(state: dict[str, Any]) -> str:
    """Listener sets with their protocols, and the last SASL logins with their principals."""
    rows = [f'<tr><td>{_e(row["name"])}</td><td>{_e(row["security_protocol"])}</td>'
            f'<td>{_e(row["bootstrap"])}</td></tr>' for row in state.get("listeners", [])]
    logins = [f'<tr><td>{_e(a["principal"])}</td><td>{_e(a["mechanism"])}</td>'
              f'<td>{_e(a["listener"])}</td><td>{_e(a["broker"])}</td>'
              f'<td>{_e(a["peer"])}</td></tr>'
              for a in reversed(state.get("security", {}).get("authentications", []))]
    return (_table("listeners", ["listener", "security protocol", "bootstrap"], rows,
                   "no listeners")
            + (_table("logins", ["principal", "mechanism", "listener", "broker", "peer"],
                      logins, "") if logins else ""))


def _quotas(state: dict[str, Any]) -> str:
    """Client quota entities (at the metadata log's end) and each broker's last throttles."""
    quotas = state.get("quotas", {})
    entities = [f'<tr><td>{_e(_entity_text(q["entity"]))}</td>'
                f'<td>{_e(", ".join(f"{k}={v:g}" for k, v in sorted(q["values"].items())))}'
                f'</td></tr>' for q in quotas.get("entities", [])]
    throttles = [f'<tr><td>{t["broker"]}</td><td>{_e(t["user"])}</td>'
                 f'<td>{_e(t["client_id"])}</td><td>{_e(t["quota"])}</td>'
                 f'<td>{t["throttle_time_ms"]}</td><td>{"active" if t["active"] else ""}</td>'
                 f'</tr>' for t in quotas.get("throttles", [])]
    return (_table("quotas", ["entity", "values"], entities, "no client quotas")
            + (_table("throttles", ["broker", "user", "client id", "quota", "throttle ms", ""],
                      throttles, "") if throttles else ""))


def _entity_text(entity: dict[str, str | None]) -> str:
    return " ".join(f"{kind}={'<default>' if name is None else name}"
                    for kind, name in sorted(entity.items()))


def _acls(state: dict[str, Any]) -> str:
    """The ACL bindings at the metadata log's end (shown once the authorizer is on or a
    binding exists)."""
    authorizer = state.get("security", {}).get("authorizer") or {}
    bindings = authorizer.get("acls", [])
    if not authorizer.get("enabled") and not bindings:
        return ""
    keys = ("resource_type", "resource_name", "pattern_type", "principal", "host",
            "operation", "permission_type")
    rows = ["<tr>" + "".join(f"<td>{_e(b[k])}</td>" for k in keys) + "</tr>"
            for b in bindings]
    return "<h2>ACLs</h2>" + _table("acls", ["resource", "name", "pattern", "principal",
                                             "host", "operation", "permission"], rows,
                                    "no ACLs (authorizer on)")


def render_view(state: dict[str, Any]) -> str:
    """The refreshable part of the page (everything but the trace)."""
    clock = state.get("clock", {})
    controller = state["controller"]
    return (f'<p class="summary">cluster <b>{_e(state["cluster_id"])}</b> · controller '
            f'{_e(controller["id"])} · metadata offset {_e(controller["metadata_offset"])} · '
            f'clock {_e(clock.get("mode"))} {_e(clock.get("now_ms", ""))}</p>'
            f'<h2>Brokers</h2>{_brokers(state)}'
            f'<h2>Listeners</h2>{_listeners(state)}'
            f'{_acls(state)}'
            f'<h2>Topics and partitions</h2>{_topics(state)}'
            f'<h2>Consumer groups</h2>{_groups(state)}'
            f'<h2>Producers and transactions</h2>{_producers(state)}'
            f'<h2>Client quotas</h2>{_quotas(state)}'
            f'<h2>Active faults</h2>{_faults(state)}'
            f'<h2>Connections</h2>{_connections(state)}')


_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.3em 0 1em}
th,td{border:1px solid #ccc;padding:.2em .5em;font-size:.9em;text-align:left}
th{background:#f0f0f0} td.empty{color:#888}
tr.fenced td.status,tr.down td.status{color:#b00;font-weight:bold}
#status{min-height:1.2em;color:#555} #status.error{color:#b00}
button{font-size:.85em}
"""

_SCRIPT = """
const refreshMs = %(refresh)d, traceRows = %(rows)d;
let lastSeq = 0;
const status = document.getElementById('status');
async function refresh() {
  const view = await fetch('/view');
  if (view.ok) document.getElementById('view').innerHTML = await view.text();
  const trace = await fetch('/trace?n=all&since=' + lastSeq);
  if (trace.ok) {
    const body = await trace.json();
    const rows = document.querySelector('#trace tbody');
    for (const r of body.requests || []) {
      const empty = rows.querySelector('td.empty');
      if (empty) empty.parentElement.remove();
      lastSeq = Math.max(lastSeq, r.seq);
      const tr = document.createElement('tr');
      for (const v of [r.seq, r.broker, r.api, r.version, r.client_id,
                       JSON.stringify(r.errors || {})]) {
        const td = document.createElement('td'); td.textContent = v; tr.appendChild(td);
      }
      rows.prepend(tr);
    }
    while (rows.children.length > traceRows) rows.lastChild.remove();
    document.getElementById('trace-state').textContent =
      body.enabled ? '' : '(the request trace is off: start-trace to record requests)';
  }
}
document.addEventListener('click', async (event) => {
  const button = event.target.closest('button.verb');
  if (!button) return;
  const verb = button.dataset.verb;
  const response = await fetch('/' + verb, {method: 'POST', body: button.dataset.args});
  const answer = await response.json();
  status.className = response.ok ? '' : 'error';
  status.textContent = response.ok ? verb + ': done' : verb + ': ' + answer.error;
  await refresh();
});
setInterval(refresh, refreshMs);
refresh();
"""


def render_page(state: dict[str, Any]) -> str:
    """The whole page: the view, the trace table (filled by the script) and the script."""
    script = _SCRIPT % {"refresh": REFRESH_MS, "rows": TRACE_ROWS}
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>mockbroker</title>"
            f"<style>{_STYLE}</style></head><body><h1>mockbroker</h1>"
            f'<p>{_button("Reset", "reset", {})} {_button("Clear faults", "clear-faults", {})}'
            f' {_button("Start trace", "start-trace", {})} <span id="status"></span></p>'
            f'<div id="view">{render_view(state)}</div>'
            '<h2>Requests <span id="trace-state"></span></h2>'
            + _table("trace", ["seq", "broker", "api", "version", "client", "errors"], [],
                     "no requests yet", element_id="trace")
            + f"<script>{script}</script></body></html>")
