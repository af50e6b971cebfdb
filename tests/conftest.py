"""Shared fixtures: paths to the real samples in ../shared and the repository root."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SAMPLES = SHARED / "samples"


@pytest.fixture(scope="session")
def samples() -> Path:
    if not SAMPLES.is_dir():
        pytest.fail(
            f"real samples not found at {SAMPLES}: ../shared must sit beside the repository"
        )
    return SAMPLES
