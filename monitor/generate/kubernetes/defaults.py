"""Defaults of ``m3mon generate --target kubernetes`` (no imports: the CLI reads them at start)."""

DEFAULT_IMAGE = "m3-monitor:local"
#: kube-prometheus-stack's release label, which its default rule and monitor selectors match.
DEFAULT_RELEASE = "kube-prometheus-stack"
DEFAULT_NAMESPACE = "m3mon"
