"""A MiniMax-M3-on-vLLM endpoint simulator: vLLM 0.33's HTTP API, /metrics, traces and faults.

Entry points: :class:`~monitor.sim.config.SimConfig`, :class:`~monitor.sim.simulator.Simulator`,
:func:`~monitor.sim.harness.running_simulator` (tests) and ``m3mon sim`` (CLI). See
``docs/simulator.md``.
"""

from __future__ import annotations

from monitor.sim.config import VLLM_VERSION, SimConfig
from monitor.sim.faults import FaultError, Faults, parse_faults

__all__ = ["VLLM_VERSION", "FaultError", "Faults", "SimConfig", "parse_faults"]
