"""Distinct names: codes into the distinct strings, missing values, categoricals."""

from __future__ import annotations

import numpy as np
import pandas as pd

from addressable.core.names import distinct


def test_each_value_is_coded_by_its_name_in_order_of_first_appearance() -> None:
    long = "void at::native::elementwise_kernel<" + "x" * 5000 + ">"
    codes, names = distinct(np.array([long, "gemm", long, "gemm", "copy"], object))
    assert names == [long, "gemm", "copy"]
    assert codes.tolist() == [0, 1, 0, 1, 2]
    assert [names[c] for c in codes] == [long, "gemm", long, "gemm", "copy"]


def test_a_missing_name_is_the_given_name_or_code_minus_one() -> None:
    values = np.array(["a", None, "b", float("nan")], object)
    codes, names = distinct(values)
    assert [names[c] for c in codes] == ["a", "", "b", ""]
    codes, names = distinct(values, missing=None)
    assert codes.tolist() == [0, -1, 1, -1] and names == ["a", "b"]


def test_a_categorical_keeps_its_codes_without_its_unused_categories() -> None:
    s = pd.Series(pd.Categorical(["k2", "k1", "k2"], categories=["k0", "k1", "k2"]))
    codes, names = distinct(s)
    assert names == ["k1", "k2"] and [names[c] for c in codes] == ["k2", "k1", "k2"]


def test_no_values_give_no_codes() -> None:
    codes, names = distinct(np.array([], object))
    assert len(codes) == 0 and names == []
