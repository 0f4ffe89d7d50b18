"""``m3mon generate``: Prometheus rules, Alertmanager routing, runbooks, Grafana dashboards, compose.

Everything is derived from the internal model (:mod:`monitor.model`) and the names in
:mod:`monitor.conventions`; :mod:`monitor.generate.output` assembles and writes the files.
"""
