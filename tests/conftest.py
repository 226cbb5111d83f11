"""Session-wide fixtures; shared helpers live in helpers.py (tests/ is on pythonpath)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def ffcc_cache(tmp_path_factory) -> Path:
    """A private runtime cache, so tests exercise building the runtime."""
    cache = tmp_path_factory.mktemp("ffcc-cache")
    os.environ["FFCC_CACHE_DIR"] = str(cache)
    return cache
