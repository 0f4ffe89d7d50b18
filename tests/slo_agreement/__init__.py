"""The SLO agreement suite: real Prometheus, the store and an oracle of docs/slo-events.md agree."""
