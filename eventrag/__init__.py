"""EventRAG: event-graph retrieval. storage/ below index/ (build) and query/ (answer); stack.py composes them."""
