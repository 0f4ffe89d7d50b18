"""The weekly SLO report for stakeholders: HTML, PDF, Markdown and JSON from the store.

:mod:`monitor.report.collect` reads the store into a frozen :class:`~monitor.report.data.ReportData`;
the renderers (:mod:`~monitor.report.page`, :mod:`~monitor.report.pdf`,
:mod:`~monitor.report.markdown`, :mod:`~monitor.report.export`) only format it;
:mod:`~monitor.report.delivery` e-mails it and posts a summary. See docs/report.md.
"""
