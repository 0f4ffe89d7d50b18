"""m3-monitor: observability and SLOs for MiniMax M3 endpoints served by vLLM or SGLang."""

__version__ = "0.1.0"
