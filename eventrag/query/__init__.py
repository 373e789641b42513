"""EventRAG query time: decompose the question, lexical + vector + graph candidates, rank, reflect."""
