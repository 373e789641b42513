"""Suite-wide test setup. Area fixtures live in each tests/<area>/conftest.py."""

from __future__ import annotations

import os

# No model or dataset hub is reachable: everything loads from local paths.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
