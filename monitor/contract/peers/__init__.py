"""Peer benchmark results as replay runs: ``vllm bench serve --save-result`` JSON, GuideLLM's
JSON report and AIPerf's ``profile_export_aiperf.json`` (docs/contract.md, *Peer results*).

:mod:`~monitor.contract.peers.detect` reads a file and maps it to
:class:`~monitor.contract.peers.model.PeerRun` values (one per benchmark in it), each through the
shared checks of :mod:`~monitor.contract.peers.validate`; :mod:`~monitor.contract.peers.origin`
tells whether a run measured the endpoint (its model and target);
:mod:`~monitor.contract.peers.judge` judges a class's SLO clauses on them without inventing
samples, and :mod:`~monitor.contract.peers.store` observes the endpoint's fingerprint and stores
each as a ``replay_runs`` row under the evidence rules.
"""
