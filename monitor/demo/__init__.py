"""``m3mon demo``: the monitor on embedded defaults (simulators + SQLite), one incident's story."""

#: Days of generated history before the live phases: two weeks, so the report (the last 7 days)
#: compares every line with the week before, and the deployment change falls inside it.
DEFAULT_HISTORY_DAYS = 14.0
