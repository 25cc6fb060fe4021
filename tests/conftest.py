"""Test setup: Triton's interpreter where there is no GPU, and the ``gpu`` marker."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernellab import runtime  # noqa: E402

runtime.setup()


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (runs on the H200, skipped elsewhere)")


def pytest_collection_modifyitems(config, items):
    if runtime.has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; none on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


os.environ.setdefault("PYTHONHASHSEED", "0")
