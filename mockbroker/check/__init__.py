"""The history checker: `mockbroker check` (README, "History checker").

A workload of real clients runs against a cluster under a seeded fault schedule and records
what happened (history.py); pure functions then look for anomalies in that history
(checks.py) and summarise them (report.py). The checker's model and checks import no
asyncio, threads or clients, so they can be fed handmade histories.
"""
