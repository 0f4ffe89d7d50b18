"""Fleet mode: static hashmod shards of endpoints, HA pairs collapsing on slot identities, one
evaluator chosen by a PostgreSQL advisory lock (see docs/fleet.md)."""
