"""Long-horizon composite tasks: k multi-hop questions over one corpus in one research request, closed by
cross-reference items (a detail only an earlier item's evidence held), scored per item (answer EM/F1,
citations resolving to gold passages) without a judge."""
