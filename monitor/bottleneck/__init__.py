"""Where the tail goes and why: stage shares of the slowest requests (:mod:`.tail`), the evidence
a window holds (:mod:`.evidence`) and the bottleneck verdict its rules give (:mod:`.rules`)."""
