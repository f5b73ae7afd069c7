"""fresh: timed-call inputs never repeat (identity or contents), keep the native domain, and are a function of the seed."""

from __future__ import annotations

import pytest
import torch

from addressable.verification.fresh import FreshInputs, stats_of


def _native() -> list:
    g = torch.Generator().manual_seed(0)
    values = torch.rand(6, 5, generator=g)  # nonnegative floats
    offsets = torch.tensor([0, 2, 2, 7, 9, 15])  # sorted 1-D: offsets
    labels = (torch.rand(8, generator=g) < 0.3).float()  # floats holding only integers
    ids = torch.randint(10, 50, (12,), generator=g)
    return [values, offsets, labels, ids, torch.ones(3, dtype=torch.bool), 7]


def test_stats_follow_the_redraw_rules() -> None:
    values, offsets, labels, ids, flags, _ = _native()
    assert stats_of(values).kind == "float" and stats_of(values).nonneg
    assert stats_of(offsets).kind == "int" and stats_of(offsets).sorted1d
    assert stats_of(labels).kind == "int" and (stats_of(labels).lo, stats_of(labels).hi) == (0, 1)
    assert stats_of(ids).kind == "int" and not stats_of(ids).sorted1d
    assert stats_of(flags).kind == "keep"


@pytest.mark.parametrize("mode", ["redraw", "permute"])
def test_consecutive_draws_share_neither_tensors_nor_contents(mode: str) -> None:
    fresh = FreshInputs(_native(), mode)
    a = [t.clone() if isinstance(t, torch.Tensor) else t for t in fresh.draw(1)]
    ptrs_a = [t.data_ptr() for t in fresh.draw(1)[:4]]
    b = fresh.draw(2)
    assert [t.data_ptr() for t in b[:4]] != ptrs_a  # the other buffer set
    assert not torch.equal(a[0], b[0]) and not torch.equal(a[3], b[3])
    assert b[5] == 7 and torch.equal(b[4], torch.ones(3, dtype=torch.bool))


def test_redraw_keeps_the_domain() -> None:
    native = _native()
    for seed in range(20):
        values, offsets, labels, ids, _, _ = FreshInputs(native, "redraw").draw(seed)
        assert bool((values >= 0).all()) and values.dtype == torch.float32
        assert offsets[0] == 0 and offsets[-1] == 15 and bool((offsets[1:] >= offsets[:-1]).all())
        assert set(labels.tolist()) <= {0.0, 1.0}
        assert int(ids.min()) >= int(native[3].min()) and int(ids.max()) <= int(native[3].max())


def test_permute_keeps_sums_multisets_and_endpoints() -> None:
    native = _native()
    values, offsets, labels, ids, _, _ = FreshInputs(native, "permute").draw(5)
    assert torch.equal(values.reshape(-1).sort().values, native[0].reshape(-1).sort().values)
    assert offsets[0] == 0 and offsets[-1] == 15 and bool((offsets[1:] >= offsets[:-1]).all())
    assert sorted(offsets.diff().tolist()) == sorted(native[1].diff().tolist())
    assert sorted(ids.tolist()) == sorted(native[3].tolist()) and labels.sum() == native[2].sum()


def test_a_draw_is_a_function_of_the_seed_alone() -> None:
    """The checker redraws a timed call's inputs from its seed in another process: same seed, same inputs."""
    one, two = FreshInputs(_native(), "redraw"), FreshInputs(_native(), "redraw")
    two.draw(99)  # a different history
    for seed in (3, 4):
        a, b = one.draw(seed), two.draw(seed)
        assert all(torch.equal(x, y) for x, y in zip(a[:5], b[:5], strict=True))


def test_fixed_repeats_the_native_draw() -> None:
    native = _native()
    fresh = FreshInputs(native, "fixed")
    assert fresh.draw(1) is native and fresh.draw(2) is native
    with pytest.raises(ValueError, match="unknown"):
        FreshInputs(native, "shuffled")
