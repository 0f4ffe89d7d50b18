"""``m3mon init``: a starter configuration from what running endpoints serve.

:mod:`~monitor.starter.fetch` reads each endpoint, :mod:`~monitor.starter.detect` says what its
pages show (with the collector's own parsers), :mod:`~monitor.starter.plan` groups endpoints into
pools and chooses probes and SLOs, :mod:`~monitor.starter.render` writes the commented YAML.
"""
