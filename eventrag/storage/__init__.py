"""eventrag.storage: graph and vector stores behind small protocols (see ``base``).

Open them with ``eventrag.storage.factory.open_graph_store(settings)`` /
``open_vector_store(settings)``; backend modules (neo4j, pymilvus) are imported only when used.
"""

from eventrag.storage.base import (
    EDGE_TYPES,
    NODE_LABELS,
    DeleteResult,
    Edge,
    ExpandedNode,
    Expansion,
    GraphStats,
    GraphStore,
    Node,
    VectorHit,
    VectorRecord,
    VectorStore,
)
from eventrag.storage.errors import StorageError
from eventrag.storage.factory import collection_name, open_graph_store, open_vector_store

__all__ = [
    "EDGE_TYPES",
    "NODE_LABELS",
    "DeleteResult",
    "Edge",
    "Expansion",
    "ExpandedNode",
    "GraphStats",
    "GraphStore",
    "Node",
    "StorageError",
    "VectorHit",
    "VectorRecord",
    "VectorStore",
    "collection_name",
    "open_graph_store",
    "open_vector_store",
]
