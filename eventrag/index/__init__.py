"""EventRAG index time: documents -> chunks -> events/entities (extract, fuse, infer) -> stores."""
