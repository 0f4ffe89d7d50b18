"""Where the tail goes and why: what a class's instant holds (:mod:`.inputs`), reduced to evidence
(:mod:`.evidence`: the probes' tail and stage seconds, :mod:`.tail`, :mod:`.stages`; the pool's
queue, cache and histograms, :mod:`.pool`; its GPUs, :mod:`.gpu`), the causes it supports
(:mod:`.causes`) and the verdict they give (:mod:`.rules`). docs/bottleneck.md."""
