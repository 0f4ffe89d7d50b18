"""``m3mon demo``: the monitor on embedded defaults (simulators + SQLite), one incident's story."""
