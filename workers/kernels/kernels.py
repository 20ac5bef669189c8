"""The pack's Triton kernels and their launchers (each launcher: torch tensors in, tensor out).

Element-wise kernels compute in fp32 and store in the input's dtype, as production kernels do;
matmul feeds tl.dot the input dtype (tensor cores) and accumulates in fp32.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


def vector_add(x: torch.Tensor, y: torch.Tensor, block: int = 256) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block)
    return out


@triton.jit
def _softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * out_stride + cols, (num / den).to(out_ptr.dtype.element_ty), mask=mask)


def _warps(block: int) -> int:
    # One row per program: more warps for wider rows, as Triton's own tutorials do.
    return min(max(block // 256, 1), 8)


def softmax(x: torch.Tensor) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    _softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols, BLOCK=block, num_warps=_warps(block))
    return out


@triton.jit
def _layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = diff * rstd * w + b
    tl.store(out_ptr + row * stride + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    _layer_norm_kernel[(rows,)](
        x, weight, bias, out, x.stride(0), cols, eps, BLOCK=block, num_warps=_warps(block)
    )
    return out


@triton.jit
def _matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BK)):
        kk = k0 * BK + rk
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(kk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(
        c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
        c,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def matmul(a: torch.Tensor, b: torch.Tensor, block: tuple[int, int, int] = (32, 32, 32)) -> torch.Tensor:
    (m, k), (k2, n) = a.shape, b.shape
    assert k == k2, f"inner dimensions differ: {k} vs {k2}"
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    bm, bn, bk = block
    grid = (triton.cdiv(m, bm), triton.cdiv(n, bn))
    _matmul_kernel[grid](
        a,
        b,
        c,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BM=bm,
        BN=bn,
        BK=bk,
    )
    return c


@triton.jit
def _row_reduce_kernel(x_ptr, out_ptr, stride, n_cols, IS_MAX: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if IS_MAX:
        acc = tl.full((BLOCK,), float("-inf"), tl.float32)
    else:
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        if IS_MAX:
            x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
            acc = tl.maximum(acc, x)
        else:
            x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
            acc += x
    result = tl.max(acc, axis=0) if IS_MAX else tl.sum(acc, axis=0)
    tl.store(out_ptr + row, result.to(out_ptr.dtype.element_ty))


def row_sum(x: torch.Tensor, block: int = 64) -> torch.Tensor:
    return _row_reduce(x, is_max=False, block=block)


def row_max(x: torch.Tensor, block: int = 64) -> torch.Tensor:
    return _row_reduce(x, is_max=True, block=block)


def _row_reduce(x: torch.Tensor, *, is_max: bool, block: int) -> torch.Tensor:
    rows, cols = x.shape
    out = torch.empty((rows,), dtype=x.dtype, device=x.device)
    _row_reduce_kernel[(rows,)](x, out, x.stride(0), cols, IS_MAX=is_max, BLOCK=block)
    return out
