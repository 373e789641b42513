"""Long-horizon composite tasks: k multi-hop questions over one corpus in one research request, scored
per sub-question (answer EM/F1, citations resolving to gold passages) without a judge."""
