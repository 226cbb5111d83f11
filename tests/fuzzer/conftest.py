"""Fixtures for ffuzz tests: small C targets built once per session.

Targets are built with afl-clang-fast, so the engine is tested against
AFL++'s own runtime; tests needing it skip cleanly when it is missing.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from fuzz_targets import BRANCHY_C, CLANG_FAST, MAGIC_C, PERSISTENT_C, build


@pytest.fixture(scope="session")
def targets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if CLANG_FAST is None:
        pytest.skip("afl-clang-fast not installed")
    d = tmp_path_factory.mktemp("targets")
    return {"magic": build(MAGIC_C, "magic", d), "persistent": build(PERSISTENT_C, "persistent", d),
            "branchy": build(BRANCHY_C, "branchy", d)}


@pytest.fixture
def seeds(tmp_path: Path) -> Path:
    d = tmp_path / "seeds"
    d.mkdir()
    (d / "one").write_bytes(b"FAAAA")
    (d / "two").write_bytes(b"hello world")
    return d
