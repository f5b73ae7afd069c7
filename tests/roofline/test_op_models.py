"""Hand-computed bytes and FLOPs of the per-op cost models (addressable.roofline.op_models)."""

from __future__ import annotations

import json

import pytest

from addressable.roofline import op_models
from addressable.roofline.op_models import Cost, Tensor, broadcast_shape, causal_pairs, cost, parse_call

BF16, F32, I64, BOOL = "c10::BFloat16", "float", "long int", "bool"


def T(shape: list[int], dtype: str = BF16, strides: list[int] | None = None) -> tuple:
    return ("t", shape, dtype, strides)


def L(*shapes: list[int]) -> tuple:
    return ("list", [list(s) for s in shapes])


def call(op: str, *args: object, list_itemsize: int = 4) -> Cost | None:
    """Cost of an op from inputs written as a trace records them (T: tensor, L: tensor list, else a scalar)."""
    dims, types, strides, concrete = [], [], [], []
    for a in args:
        if isinstance(a, tuple) and a[0] == "t":
            _, shape, dtype, st = a
            dims.append(shape), types.append(dtype), concrete.append("")
            strides.append(st if st is not None else _contiguous(shape))
        elif isinstance(a, tuple) and a[0] == "list":
            dims.append(a[1]), types.append("TensorList"), strides.append([]), concrete.append("")
        else:
            dims.append([]), types.append("Scalar" if a != "" else ""), strides.append([]), concrete.append(str(a))
    c = parse_call(f"aten::{op}", json.dumps(dims), json.dumps(types), json.dumps(strides), json.dumps(concrete),
                   list_itemsize)
    return cost(c)


def _contiguous(shape: list[int]) -> list[int]:
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= n
    return out[::-1]


def rw(c: Cost | None) -> tuple[float, float]:
    assert c is not None
    return c.read, c.write


# ---------------------------------------------------------------- elementwise


def test_elementwise_broadcast_reads_each_input_once_and_writes_the_broadcast_shape() -> None:
    # [4, 8, 16] bf16 + [16] bf16: read 1024 + 32, write 1024
    assert rw(call("add", T([4, 8, 16]), T([16]), 1)) == (1056, 1024)
    # [4, 1, 16] * [8, 1]: both broadcast to [4, 8, 16] (512 elements): read 128 + 16, write 1024
    assert rw(call("mul", T([4, 1, 16]), T([8, 1]))) == (144, 1024)


def test_elementwise_promotes_to_the_widest_float_and_comparisons_write_bools() -> None:
    assert rw(call("mul", T([4, 8]), T([8], F32))) == (64 + 32, 4 * 8 * 4)
    # a wrapped Python scalar (a 0-dim double tensor) does not widen a bf16 tensor
    assert rw(call("mul", T([4, 8]), T([], "double"))) == (64 + 8, 64)
    assert rw(call("lt", T([10], F32), T([10], F32))) == (80, 10)


def test_in_place_elementwise_writes_its_first_input() -> None:
    assert rw(call("add_", T([10, 10], F32), T([10], F32), 1)) == (440, 400)
    assert rw(call("fill_", T([10, 10], F32), 0)) == (0, 400)


def test_broadcast_shape() -> None:
    assert broadcast_shape((4, 1, 16), (8, 1)) == (4, 8, 16)
    with pytest.raises(ValueError):
        broadcast_shape((3,), (4,))


# ---------------------------------------------------------------- strided copies


def test_transposed_copy_moves_the_tensor_once_each_way() -> None:
    # a [64, 64] fp32 transpose: 16384 bytes read, 16384 written
    assert rw(call("copy_", T([64, 64], F32), T([64, 64], F32, [1, 64]), False)) == (16384, 16384)


def test_strided_slice_reads_the_sectors_it_touches() -> None:
    # y[:, ::2] of a [64, 128] bf16: elements 4 bytes apart, so every sector is touched: the span,
    # (63*128 + 63*2 + 1) * 2 = 16382 bytes, is read; the dense copy written is 64*64*2 = 8192
    assert rw(call("clone", T([64, 64], BF16, [128, 2]), "")) == (16382, 8192)
    # x[:, 0] of a [1024, 256] fp32: one 32-byte sector per element
    assert rw(call("clone", T([1024], F32, [256]), "")) == (1024 * 32, 4096)


def test_broadcast_views_are_read_once() -> None:
    # an expanded [1, 64] -> [32, 64] view (stride 0) reads its 64 elements once
    assert Tensor((32, 64), 4, (0, 1)).touched == 256


def test_gather_with_an_expanded_index_reads_the_index_once() -> None:
    # embedding-style gather: a [8192, 768] index expanded from [8192, 1] (stride 0) into a bf16 table
    c = call("gather", T([50257, 768]), 0, T([8192, 768], I64, [1, 0]), False)
    assert rw(c) == (8192 * 768 * 2 + 8192 * 8, 8192 * 768 * 2)


def test_to_copy_writes_the_new_dtype() -> None:
    assert rw(call("_to_copy", T([100], F32), 15, "", "", "", False, "")) == (400, 200)  # 15: bfloat16


# ---------------------------------------------------------------- reductions


def test_reductions_read_once_and_write_the_kept_positions() -> None:
    assert rw(call("sum", T([32, 128]), "[1]", False, "")) == (8192, 64)
    assert rw(call("mean", T([32, 128]), "", False, "")) == (8192, 2)
    assert rw(call("max", T([32, 128]), 1, False)) == (8192, 32 * (2 + 8))  # values and int64 indices


# ---------------------------------------------------------------- normalization


def test_layer_norm_forward_and_backward() -> None:
    x, w = T([16, 1024]), T([1024])
    assert rw(call("native_layer_norm", x, "[1024]", w, w, 1e-5)) == (32768 + 2048 * 2, 32768 + 2 * 16 * 4)
    stats = T([16, 1], F32)
    c = call("native_layer_norm_backward", x, x, "[1024]", stats, stats, w, w, "[True, True, True]")
    # two passes over dy and x (and the float mean and rstd), w once; writes dx, dw, db
    assert rw(c) == (2 * (32768 + 32768 + 128) + 2048, 32768 + 2 * 2048)
    assert sum(b for _, b in c.passes) == c.bytes


def test_rms_norm_forward_and_backward() -> None:
    x, w = T([16, 1024]), T([1024])
    assert rw(call("_fused_rms_norm", x, "[1024]", w, 1e-6)) == (32768 + 2048, 32768 + 16 * 4)
    c = call("_fused_rms_norm_backward", x, x, "[1024]", T([16, 1], F32), w, "[True, True]")
    assert rw(c) == (2 * (32768 + 32768 + 64) + 2048, 32768 + 2048)
    assert sum(b for _, b in c.passes) == c.bytes


def test_batch_norm_training_reads_x_twice_and_inference_once() -> None:
    x, p = T([8, 64, 32, 32], BF16, [65536, 1, 2048, 64]), T([64], F32)  # channels_last
    c = call("native_batch_norm", x, p, p, p, p, True, 0.1, 1e-5)
    # x is 1 MiB; 256 B per channel statistic: statistics pass reads x, writes save_mean/invstd; transform
    # reads x, w, b, save_mean/invstd, writes y; the running mean and var are read and written
    assert rw(c) == (2 * 1048576 + 6 * 256, 1048576 + 4 * 256)
    assert [round(b) for _, b in c.passes] == [1048576 + 512, 2 * 1048576 + 1024, 1024]
    assert sum(b for _, b in c.passes) == c.bytes
    assert rw(call("native_batch_norm", x, p, p, p, p, False, 0.1, 1e-5)) == (1048576 + 1024, 1048576)


def test_batch_norm_backward() -> None:
    x, p = T([8, 64, 32, 32]), T([64], F32)
    c = call("native_batch_norm_backward", x, x, p, p, p, p, p, True, 1e-5, "[True, True, True]")
    assert rw(c) == (4 * 1048576 + 7 * 256, 1048576 + 4 * 256)
    assert sum(b for _, b in c.passes) == c.bytes


# ---------------------------------------------------------------- softmax


def test_softmax_forward_and_backward() -> None:
    x = T([4, 8, 128, 128])  # 1 MiB of bf16
    assert rw(call("_softmax", x, -1, False)) == (1048576, 1048576)
    assert rw(call("_softmax", x, -1, True)) == (1048576, 2 * 1048576)  # half_to_float
    assert rw(call("_softmax_backward_data", x, x, -1, 15)) == (2 * 1048576, 1048576)


# ---------------------------------------------------------------- embedding


def test_embedding_bag_reads_the_rows_its_indices_touch() -> None:
    # 512 indices into a [1000, 64] fp32 table, 33 offsets with include_last_offset: 32 bags
    c = call("_embedding_bag", T([1000, 64], F32), T([512], I64), T([33], I64), False, 0, False, "", True, -1)
    assert rw(c) == (512 * 256 + 512 * 8 + 33 * 8, 32 * 256)


def test_embedding_reads_one_row_per_index() -> None:
    c = call("embedding", T([50257, 768]), T([8, 1024], I64), -1, False, False)
    assert rw(c) == (8192 * 1536 + 8192 * 8, 8192 * 1536)


def test_embedding_backward_small_is_one_pass_large_is_sort_and_fp32_segments() -> None:
    # gpt2's wpe: 1024 indices -> embedding_backward_feature_kernel: reads grad and indices, writes a row per index
    c = call("embedding_dense_backward", T([1, 1024, 768]), T([1, 1024], I64), 1040, -1, False)
    assert rw(c) == (1024 * 1536 + 1024 * 8, 1024 * 1536) and c.passes == ()
    # gpt2's wte: 8192 indices into 50257 rows -> the sort path
    c = call("embedding_dense_backward", T([8, 1024, 768]), T([8, 1024], I64), 50257, -1, False)
    seg = 50257 * (1 - (1 - 1 / 50257) ** 8192)  # expected distinct rows: 7559.3
    assert seg == pytest.approx(7559.3, abs=0.1)
    grad = 8192 * 768 * 2 + 8192 * 8 + 2 * seg * 8 + seg * 768 * 4  # grad rows + sorted positions -> fp32 sums
    scatter = seg * 768 * 4 + 2 * seg * 8 + seg * 768 * 2  # fp32 sums -> the bf16 weight-gradient rows
    sort = 8192 * 8 + 2 * 8192 * 8 + 2 * 8192 * 8 + 2 * seg * 8
    assert [p for p, _ in c.passes] == ["compute_grad_weight", "sum_and_scatter", "."]
    assert [b for _, b in c.passes] == pytest.approx([grad, scatter, sort])
    assert c.bytes == pytest.approx(grad + scatter + sort)
    # measured on the H200 (23:27 run): compute_grad_weight read 12.72 MB, wrote 23.08 MB into L2: 35.80 MB
    assert grad / 35_803_136 == pytest.approx(1.0, abs=0.02)
    assert call("embedding_dense_backward", T([1024, 768]), T([1024], I64), 1040, -1, True).passes  # scale_grad_by_freq
    assert op_models.distinct_rows(5, 1) == 1 and op_models.distinct_rows(1, 1000) == pytest.approx(1.0)


# ---------------------------------------------------------------- GEMM, convolution, attention


def test_gemm_flops() -> None:
    a, b = T([128, 256]), T([256, 512])
    c = call("mm", a, b)
    assert (c.flops, c.read, c.write, c.dtype) == (2 * 128 * 512 * 256, 65536 + 262144, 131072, "bf16")
    assert call("addmm", T([512]), a, b, 1, 1).read == 65536 + 262144 + 1024
    assert call("bmm", T([4, 128, 256]), T([4, 256, 512])).flops == 4 * 2 * 128 * 512 * 256
    assert call("linear", T([8, 128, 256]), T([512, 256]), T([512])).flops == 2 * 1024 * 512 * 256
    assert call("mm", T([128, 256], F32), T([256, 512], F32)).dtype == "fp32"


def test_conv_flops_forward_and_backward() -> None:
    x, w = T([8, 64, 56, 56]), T([128, 64, 3, 3])
    # cudnn_convolution(x, w, padding, stride, dilation, groups, ...): 3x3 stride 2 pad 1 -> 28 x 28
    c = call("cudnn_convolution", x, w, "[1, 1]", "[2, 2]", "[1, 1]", 1, True, False, True)
    out = 8 * 128 * 28 * 28
    assert c.flops == 2 * out * 64 * 9
    assert rw(c) == (8 * 64 * 56 * 56 * 2 + 128 * 64 * 9 * 2, out * 2)
    c2 = call("convolution", x, w, "", "[2, 2]", "[1, 1]", "[1, 1]", False, "[0, 0]", 1)
    assert c2.flops == c.flops
    dy = T([8, 128, 28, 28])
    back = call("convolution_backward", dy, x, w, "[128]", "[2, 2]", "[1, 1]", "[1, 1]", False, "[0, 0]", 1,
                "[True, True, False]")
    assert back.flops == 2 * c.flops
    only_dw = call("convolution_backward", dy, x, w, "[128]", "[2, 2]", "[1, 1]", "[1, 1]", False, "[0, 0]", 1,
                   "[False, True, False]")
    assert only_dw.flops == c.flops
    # a depthwise 3x3 (groups = channels): w is [64, 1, 3, 3]
    dw = call("cudnn_convolution", x, T([64, 1, 3, 3]), "[1, 1]", "[1, 1]", "[1, 1]", 64, True, False, True)
    assert dw.flops == 2 * (8 * 64 * 56 * 56) * 9


def test_sdpa_flops_causal_gqa_and_backward() -> None:
    q = T([2, 8, 1024, 64])
    full = call("_scaled_dot_product_flash_attention", q, q, q, 0.0, False, False, "")
    assert full.flops == 2 * 2 * 8 * 1024 * 1024 * (64 + 64)
    causal = call("_scaled_dot_product_flash_attention", q, q, q, 0.0, True, False, "")
    assert causal.flops == 2 * 2 * 8 * (1024 * 1025 // 2) * 128
    assert rw(causal) == (3 * 2 * 8 * 1024 * 64 * 2, 2 * 8 * 1024 * 64 * 2 + 2 * 8 * 1024 * 4)
    back = call("_scaled_dot_product_cudnn_attention_backward", q, q, q, q, q, T([2, 8, 1024], F32), "", "", "",
                "", "", 1024, 1024, 0.0, True, "")
    assert back.flops == 2.5 * causal.flops
    kv = T([1, 8, 128, 128])
    gqa = call("_scaled_dot_product_cudnn_attention", T([1, 32, 128, 128]), kv, kv, "", True, 0.0, False, False, "")
    assert gqa.flops == 2 * 32 * 128 * 128 * 256
    bshd = call("_flash_attention_forward", T([2, 1024, 8, 64]), T([2, 1024, 8, 64]), T([2, 1024, 8, 64]),
                "", "", 1024, 1024, 0.0, True, False, "")
    assert bshd.flops == causal.flops
    assert causal_pairs(3, 5) == 6 and causal_pairs(5, 3) == 6 + 2 * 3


# ---------------------------------------------------------------- optimizer, loss, pooling


def test_fused_adam_reads_four_states_and_writes_three() -> None:
    lists = [L([3, 4], [4])] * 4  # 16 fp32 elements each: 64 bytes
    c = call("_fused_adam_", *lists, L(), L([], []), 0.001, 0.9, 0.999, 0.0, 1e-8, False, False, "", "")
    assert rw(c) == (4 * 64, 3 * 64)


def test_foreach_ops_read_all_lists_and_write_the_first() -> None:
    assert rw(call("_foreach_add_", L([3, 4], [4]), L([3, 4], [4]), -0.1)) == (128, 64)


def test_unrecorded_optimizer_lists_take_the_given_parameters() -> None:
    """Kineto records long lists as []: the step's parameters (bf16, 2 + 6 elements: 16 bytes) stand in."""
    params = (Tensor((2,), 2, None, BF16), Tensor((2, 3), 2, None, BF16))
    def with_params(op: str, types: list[str], concrete: list[str]) -> Cost | None:
        return cost(parse_call(f"aten::{op}", json.dumps([[]] * len(types)), json.dumps(types), "",
                               json.dumps(concrete), 2, params))
    assert rw(with_params("_foreach_mul_", ["TensorList", "Scalar"], ["", "0.9"])) == (16, 16)
    assert rw(with_params("_foreach_add_", ["TensorList", "TensorList", "Scalar"], ["", "", "1"])) == (32, 16)
    adam = ["TensorList"] * 6 + ["Scalar"] * 5 + ["Scalar", "Scalar"]
    # amsgrad False: the (empty) max_exp_avg_sqs and the step counters are not counted
    assert rw(with_params("_fused_adamw_", adam, [""] * 6 + ["0.001", "0.9", "0.999", "0.01", "1e-08",
                                                             "False", "False"])) == (4 * 16, 3 * 16)
    assert rw(with_params("_fused_adamw_", adam, [""] * 6 + ["0.001", "0.9", "0.999", "0.01", "1e-08",
                                                             "True", "False"])) == (5 * 16, 4 * 16)
    sgd = ["TensorList"] * 3 + ["Scalar"] * 2
    assert rw(with_params("_fused_sgd_", sgd, ["", "", "", "0.0", "0.9"])) == (3 * 16, 2 * 16)
    assert rw(with_params("_fused_sgd_", sgd, ["", "", "", "0.0", "0.0"])) == (2 * 16, 16)  # no momentum buffers
    assert cost(parse_call("aten::_foreach_mul_", "[[], []]", '["TensorList", "Scalar"]', "", '["", "0.9"]')) is None


def test_softmax_reads_long_rows_once_per_pass_of_the_multipass_kernel() -> None:
    """GPT-2's loss: log_softmax over 8192 rows of 50257 fp32 logits (1,646,821,376 bytes)."""
    n = 8192 * 50257 * 4
    c = call("_log_softmax", T([8192, 50257], F32), 1, False)
    assert rw(c) == (n, n)
    assert dict(c.variants) == {op_models.SOFTMAX_MULTIPASS_FORWARD: 3 * n + n}  # max, sum of exp, output
    b = call("_log_softmax_backward_data", T([8192, 50257], F32), T([8192, 50257], F32), 1, 6)
    assert rw(b) == (2 * n, n)
    assert dict(b.variants) == {op_models.SOFTMAX_MULTIPASS_BACKWARD: 2 * n + n + n}  # grad twice, output once


def test_nll_loss_gathers_one_sector_per_target() -> None:
    assert rw(call("nll_loss_forward", T([64, 1000], F32), T([64], I64), "", 1, -100)) == (512 + 64 * 32, 8)


def test_max_pool_writes_values_and_indices() -> None:
    x = T([8, 64, 112, 112])
    c = call("max_pool2d_with_indices", x, "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", False)
    assert rw(c) == (8 * 64 * 112 * 112 * 2, 8 * 64 * 56 * 56 * (2 + 8))


# ---------------------------------------------------------------- coverage and unmodelled ops


def test_unknown_ops_and_missing_shapes_are_unmodelled() -> None:
    assert call("my_custom_op", T([10])) is None
    assert cost(parse_call("aten::mm", "[[], []]", '["", ""]')) is None  # shapes not recorded


def test_every_family_the_issue_names_has_a_model() -> None:
    fams = op_models.families()
    for family in ("elementwise", "copy", "reduction", "layer_norm", "rms_norm", "batch_norm", "softmax",
                   "embedding", "embedding_bag", "optimizer", "loss", "gemm", "conv", "attention"):
        assert fams.get(family), family
