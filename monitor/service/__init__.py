"""The long-running service behind ``m3mon run``: schedules, exporter and Alertmanager receiver."""
