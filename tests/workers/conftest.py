"""Fixtures for the worker tests, from tests/workers/cluster.py: `redis_url`, `cluster`, `iris`,
`sleep_policy`. The module is importable as `practicum_test_cluster` once this conftest has loaded it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_NAME = "practicum_test_cluster"


def load_cluster_module():
    if _NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).resolve().parent / "cluster.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_NAME]


_cluster = load_cluster_module()
redis_url = _cluster.redis_url
cluster = _cluster.cluster
iris = _cluster.iris
sleep_policy = _cluster.sleep_policy
