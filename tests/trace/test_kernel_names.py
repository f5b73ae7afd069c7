"""Kernel names that fit a column (addressable.trace.kernel_names): the own name first, rows kept apart."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from addressable.trace.kernel_names import compact, display_name, fit_distinct, short_names

ADD8 = ("void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, "
        "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)")
RELU8 = ("void at::native::vectorized_elementwise_kernel<8, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
         "c10::BFloat16, at::native::(anonymous namespace)::threshold_kernel_impl<c10::BFloat16>(at::TensorIteratorBase&, "
         "c10::BFloat16, c10::BFloat16)::{lambda(c10::BFloat16, c10::BFloat16)#1}>, std::array<char*, 3ul> >(int, ...)")
CLAMP8 = ("void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous namespace)::launch_clamp_scalar("
          "at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::"
          "operator()() const::{lambda()#14}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >"
          "(int, ...)")
SILU = ("void at::native::vectorized_elementwise_kernel<8, at::native::(anonymous namespace)::silu_kernel("
        "at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#6}::operator()() const::"
        "{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, ...)")


def test_compact_drops_namespaces_lambdas_and_inner_signatures() -> None:
    assert compact("at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> ") == \
        "CUDAFunctor_add<BFloat16>, array<char*, 3ul>"
    assert display_name(SILU) == ("vectorized_elementwise_kernel<8, silu_kernel, array<char*, 2ul>>", 29)
    assert display_name(CLAMP8)[0] == "vectorized_elementwise_kernel<8, launch_clamp_scalar, array<char*, 2ul>>"
    assert display_name("void at::native::(anonymous namespace)::max_pool_forward_nhwc<c10::BFloat16, int>("
                        "c10::BFloat16 const*, int)") == ("max_pool_forward_nhwc<BFloat16, int>", 21)
    assert display_name("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT")[0] == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"


def test_the_three_vectorized_rows_of_the_roofline_stay_apart() -> None:
    """issue 26: `roofline` showed three rows of `void at::native::vectorized_elementwise_kernel<8, at::nativ`."""
    names = [ADD8, RELU8, CLAMP8]
    assert len({n[:59] for n in names}) == 1  # the old cut
    shown = short_names(names, 59)
    assert len(set(shown)) == 3 and all(len(s) <= 59 for s in shown)
    assert all(s.startswith("vectorized_elementwise_kernel<8, ") for s in shown)  # own name first
    assert shown[0] == "vectorized_elementwise_kernel<8, CUDAFunctor_add<BFloat16>…"
    assert "launch_clamp_scalar" in shown[2]


def test_names_that_share_a_long_prefix_show_where_they_differ() -> None:
    a = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel"
    b = a.replace("tilesize128x128x64", "tilesize256x128x64")
    got = short_names([a, b, "softmax_warp_forward<float>"], 40)
    assert got[2] == "softmax_warp_forward<float>"  # a name that fits stays whole
    assert got[0] != got[1] and all(len(g) <= 40 for g in got[:2])
    assert "tilesize128" in got[0] and "tilesize256" in got[1] and got[0].startswith("sm90_xmma_gemm_bf16")
    # kernels that differ only in their parameters get them
    over = short_names(["void f<int>(float*)", "void f<int>(double*)"], 40)
    assert over == ["f<int>(float*)", "f<int>(double*)"]


@given(st.lists(st.text(alphabet="ab_<>, ", min_size=0, max_size=40), max_size=8), st.integers(8, 30))
def test_fit_distinct_keeps_different_texts_different(texts: list[str], width: int) -> None:
    """The input that would beat it: texts equal up to the width, differing past it."""
    texts = [*texts, *(t + "tail" for t in texts)]  # pairs that share a prefix as long as the text
    out = fit_distinct(texts, width)
    assert all(len(o) <= width for o in out)
    for t, o in zip(texts, out, strict=True):
        assert o == t or len(t) > width or "[" in o  # a text that fits is shown whole, unless it needs a number
    seen: dict[str, str] = {}
    for t, o in zip(texts, out, strict=True):
        assert seen.setdefault(o, t) == t, (o, t)
