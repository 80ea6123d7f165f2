"""Client telemetry (KIP-714): subscriptions, client instances, pushed metrics.

Owns the metrics subscriptions, what each client instance pushed, and the decoder
of OTLP MetricsData.
"""
