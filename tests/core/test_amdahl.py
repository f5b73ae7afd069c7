"""Amdahl's law (addressable/core/amdahl.py), the one implementation projection, the roofline and the plots use."""

from __future__ import annotations

import math

import pytest

from addressable.core.amdahl import amdahl


def test_amdahl_formula() -> None:
    assert amdahl([20, 10], [4, 2], 100) == pytest.approx(1 / ((1 - 0.3) + 0.2 / 4 + 0.1 / 2))
    assert amdahl([], [], 100) == 1.0
    assert amdahl([40], [math.inf], 100) == pytest.approx(1 / 0.6)
    assert amdahl([100], [math.inf], 100) == math.inf
    assert math.isnan(amdahl([80, 40], [2, 2], 100))  # parts above the total: undefined


def test_amdahl_is_exact_and_order_free() -> None:
    parts = [0.1, 1e-17, 0.2, 0.3]
    assert amdahl(parts, [2.0] * 4, 1.0) == amdahl(parts[::-1], [2.0] * 4, 1.0) == 1 / 0.7
    assert math.isnan(amdahl([1.0], [2.0], 0.0)) and math.isnan(amdahl([1.0], [2.0], -1.0))
    assert amdahl([-10.0], [math.inf], 100.0) == pytest.approx(100 / 110)  # a part that grows: a slowdown
