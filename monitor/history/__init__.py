"""Generated history: days of probe results, spans, scrape intervals and evaluations in minutes.

``m3mon demo`` writes a week of it before its live phases, so the first report a user opens holds
a week; tests and benchmarks that need history use it too. See docs/history.md.
"""

from monitor.history.generate import History, write_history
from monitor.history.write import Outage, folder_outage

__all__ = ["History", "Outage", "folder_outage", "write_history"]
