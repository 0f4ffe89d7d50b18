"""``m3mon generate --target kubernetes``: the same rules, routing, dashboards and runbooks as the
default target, as the objects kube-prometheus-stack and kustomize take (docs/kubernetes.md).

Layout under ``DIR/kubernetes/``::

    kustomization.yaml         both folders below, in one namespace
    monitor/                   kustomize base of the monitor: Deployment, Service, PVC (SQLite),
                               ConfigMaps of the config and the runbooks (configMapGenerator)
    monitoring/                prometheus-operator objects (PrometheusRule, ServiceMonitor,
                               PodMonitor, AlertmanagerConfig) and the dashboard ConfigMaps
"""
