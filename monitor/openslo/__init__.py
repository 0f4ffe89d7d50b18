"""OpenSLO in and out: ``m3mon openslo import`` and ``m3mon openslo export``.

OpenSLO (https://openslo.com) describes SLOs as YAML documents of kinds ``Service``, ``SLO``,
``SLI``, ``DataSource``, ``AlertPolicy``, ``AlertCondition`` and ``AlertNotificationTarget``.
m3mon maps them onto its own configuration:

* a ``Service`` is a request class (its m3mon-only settings ride in ``m3mon.dev/…`` annotations);
* an ``SLO`` with ``budgetingMethod: Occurrences`` over a rolling 28d/30d window is one of the
  class's SLOs; its SLI is attributed from the PromQL, which must read the metric m3mon's event
  definitions (:mod:`monitor.events`) read for that SLI;
* an ``AlertPolicy`` with one ``burnrate`` ``AlertCondition`` is one row of the multi-window burn
  alerts (:data:`monitor.conventions.BURN_ALERTS`);
* a ``DataSource`` of type ``vLLM`` or ``SGLang`` is an endpoint.

What does not map is refused with a message naming the document and the field
(:mod:`monitor.openslo.mapping`); the export (:mod:`monitor.openslo.export`) writes v1 documents
that the import reads back to the same configuration.
"""
