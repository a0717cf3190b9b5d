"""The suite itself: what it runs must not depend on the machine's user."""
import os
from pathlib import Path

import pytest

from pyfftgl import kernels, wisdom
from pyfftgl.backends import get_device

from conftest import BACKENDS

pytestmark = pytest.mark.quick


def test_the_suite_runs_with_its_own_cache_folder(monkeypatch, tmp_path):
    suite = Path(__file__).resolve().parent.parent / ".test-cache"
    assert kernels.cache_dir() == suite and os.environ["PYFFTGL_CACHE_DIR"] == str(suite)
    opened = {b: get_device(b).info for b in BACKENDS}
    # the tuned shapes the devices opened with are the shipped ones alone: none of a user's
    monkeypatch.setenv("PYFFTGL_CACHE_DIR", str(tmp_path))  # an empty cache: shipped wisdom only
    for backend, info in opened.items():
        assert info.limits.tuned == wisdom.load(info.name, backend), backend
