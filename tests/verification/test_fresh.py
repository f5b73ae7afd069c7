"""fresh: timed-call inputs never repeat (identity or contents), keep the native domain, and are a function of the seed."""

from __future__ import annotations

import pytest
import torch

from addressable.verification.fresh import FreshInputs, problem_draw, problem_draws_unusable, stats_of
from addressable.verification.harness import make_inputs


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


class _Skewed:
    """A problem whose indices are skewed (most draws hit a few rows) and whose bag count varies with the seed."""

    @staticmethod
    def get_inputs() -> list:
        bags = int(torch.randint(3, 9, ()).item())
        ids = (torch.rand(400) ** 6 * 1000).long()  # heavily skewed toward 0
        offsets = torch.linspace(0, 400, bags + 1).long()
        return [ids, offsets, torch.randn(4, 4)]


def test_problem_mode_draws_the_problem_itself() -> None:
    """Each draw is get_inputs() under the seed: the skew, the varying bag count and the dtypes are the problem's."""
    native = make_inputs(_Skewed, 0, "native", "cpu")
    fresh = FreshInputs(native, "problem", lambda s: problem_draw(_Skewed, s, "cpu"))
    for seed in (5, 6, 7):
        ids, offsets, dense = fresh.draw(seed)
        want = make_inputs(_Skewed, seed, "native", "cpu")
        assert all(torch.equal(a, b) for a, b in zip((ids, offsets, dense), want, strict=True))
        assert float((ids < 10).float().mean()) > 0.4  # redraw's uniform ids would put ~1% there
    assert {len(fresh.draw(s)[1]) for s in range(20)} != {len(native[1])}  # shapes follow the seed too


def test_problem_mode_never_reuses_the_previous_two_buffers() -> None:
    fresh = FreshInputs(make_inputs(_Skewed, 0, "native", "cpu"), "problem", lambda s: problem_draw(_Skewed, s, "cpu"))
    seen: list[set[int]] = []
    for seed in range(8):
        ptrs = {t.data_ptr() for t in fresh.draw(seed)}
        assert not any(ptrs & old for old in seen[-2:])
        seen.append(ptrs)
    with pytest.raises(ValueError, match="needs the problem's draw"):
        FreshInputs([torch.ones(2)], "problem")


def test_problem_mode_is_refused_for_seed_blind_or_shape_shifting_draws() -> None:
    class Blind:
        @staticmethod
        def get_inputs() -> list:
            return [torch.arange(10.0)]

    class Shifty:
        @staticmethod
        def get_inputs() -> list:
            return [torch.rand(3), torch.zeros(2, dtype=torch.int64)]

    def unusable(problem: type, native_seed: int = 0) -> str:
        native = make_inputs(problem, native_seed, "native", "cpu")
        return problem_draws_unusable(native, lambda s: problem_draw(problem, s, "cpu"), 11)

    assert unusable(_Skewed) == ""
    assert "same inputs for every seed" in unusable(Blind)
    native = [torch.rand(3), torch.zeros(2)]  # a float where the draws hold an int64
    assert "unlike its first draw" in problem_draws_unusable(native, lambda s: problem_draw(Shifty, s, "cpu"), 1)
