import pytest
import torch

from helpers import autograd_grad, compare_gradients, numerical_grad


def test_known_gradient_of_sum_of_squares():
    gx, gy = numerical_grad(lambda x, y: (x**2 + y**2).sum(), torch.tensor(3.0), torch.tensor(-2.0))
    assert gx.item() == pytest.approx(6.0, abs=1e-8)
    assert gy.item() == pytest.approx(-4.0, abs=1e-8)
    assert gx.dtype == torch.float64


def test_matrix_function_matches_closed_form():
    torch.manual_seed(0)
    a, v = torch.randn(3, 4, dtype=torch.float64), torch.randn(4, dtype=torch.float64)
    (ga, gv) = numerical_grad(lambda a, v: (a @ v).pow(2).sum(), a, v)
    assert torch.allclose(ga, 2 * torch.outer(a @ v, v), atol=1e-7)
    assert torch.allclose(gv, 2 * a.T @ (a @ v), atol=1e-7)


def test_agrees_with_torch_gradcheck_on_a_nonlinear_function():
    torch.manual_seed(1)
    w = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)

    def fn(w, x):
        return torch.sin(w @ x).pow(3).sum()

    assert torch.autograd.gradcheck(fn, (w, x))
    for err in compare_gradients(fn, w, x):
        assert err.max_abs_error < 1e-8 and err.max_rel_error < 1e-6


def test_compare_finds_a_wrong_backward():
    class WrongSquare(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**2

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * x  # should be 2x

    [err] = compare_gradients(lambda x: WrongSquare.apply(x).sum(), torch.tensor([1.0, 2.0]))
    assert err.max_abs_error == pytest.approx(2.0, abs=1e-6)
    assert err.max_rel_error == pytest.approx(0.5, abs=1e-6)


def test_inputs_are_not_modified_and_non_contiguous_inputs_work():
    x = torch.arange(6, dtype=torch.float64).reshape(2, 3).T  # non-contiguous
    before = x.clone()
    (g,) = numerical_grad(lambda t: (t * t).sum(), x)
    assert torch.equal(x, before)
    assert torch.allclose(g, 2 * x, atol=1e-7)


def test_dtype_none_keeps_float32_and_is_less_accurate():
    x = torch.tensor([1.5])
    (g32,) = numerical_grad(lambda t: t.exp().sum(), x, h=1e-6, dtype=None)
    (g64,) = numerical_grad(lambda t: t.exp().sum(), x, h=1e-6)
    exact = torch.exp(torch.tensor(1.5, dtype=torch.float64))
    assert g32.dtype == torch.float32
    assert abs(g32.double().item() - exact) > 100 * abs(g64.item() - exact)


def test_unused_input_gets_zero_autograd_gradient():
    _, gy = autograd_grad(lambda x, y: x.sum(), torch.ones(2), torch.ones(3))
    assert torch.equal(gy, torch.zeros(3, dtype=torch.float64))


def test_non_scalar_output_is_refused():
    with pytest.raises(ValueError, match="scalar tensor"):
        numerical_grad(lambda x: x * 2, torch.ones(3))
    with pytest.raises(ValueError, match="scalar tensor"):
        compare_gradients(lambda x: 3.0, torch.ones(3))


def test_integer_input_is_refused():
    with pytest.raises(TypeError, match="floating dtype"):
        numerical_grad(lambda x: x.sum(), torch.arange(3))


def test_non_tensor_and_missing_inputs():
    with pytest.raises(TypeError, match="torch.Tensor"):
        numerical_grad(lambda x: x, [1.0, 2.0])
    with pytest.raises(ValueError, match="at least one input"):
        numerical_grad(lambda: torch.tensor(1.0))


@pytest.mark.parametrize("h", [0, -1e-3, float("nan"), float("inf"), "0.1", True])
def test_bad_step(h):
    with pytest.raises(ValueError, match="positive finite"):
        numerical_grad(lambda x: x.sum(), torch.ones(2), h=h)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float16, torch.bfloat16])
def test_a_dtype_too_coarse_for_differences_is_refused(dtype):
    # before: d(x²)/dx at 3 came out as 2,500,000 (int64) or 0 (float16)
    with pytest.raises(TypeError, match=rf"dtype is {dtype}; .*float64 is recommended"):
        numerical_grad(lambda x: x**2, torch.tensor(3.0), dtype=dtype)


def test_dtype_none_with_half_precision_inputs_is_refused():
    x = torch.tensor(3.0, dtype=torch.float16)
    with pytest.raises(TypeError, match=r"input 0's dtype .* is torch.float16"):
        numerical_grad(lambda t: t**2, x, dtype=None)
    (g,) = numerical_grad(lambda t: t**2, x)  # the default copies it to float64: fine
    assert g.item() == pytest.approx(6.0, abs=1e-6)


def test_dtype_must_be_a_torch_dtype():
    with pytest.raises(TypeError, match="dtype must be a torch.dtype"):
        numerical_grad(lambda x: x.sum(), torch.ones(2), dtype="float64")


def test_compare_gradients_uses_the_step_it_is_given():
    """x³ at 1: the central difference's error is h² exactly (f'''/6 · 2h²/2 = h²)."""
    cube = lambda x: (x**3).sum()  # noqa: E731
    x = torch.tensor([1.0], dtype=torch.float64)
    (coarse,) = compare_gradients(cube, x, h=1e-1)
    (fine,) = compare_gradients(cube, x)
    assert coarse.max_abs_error == pytest.approx(1e-2, rel=1e-6)
    assert fine.max_abs_error < 1e-8  # the default step is small (1e-6)


def test_relative_error_is_relative_for_small_gradients():
    """A gradient of 1e-3 with an error of 1e-9 has a relative error of 1e-6, not 1e-9."""
    f = lambda x: 1e-3 * (x**3).sum() / 3  # noqa: E731  gradient 1e-3 x² = 1e-3 at x = 1
    (error,) = compare_gradients(f, torch.tensor([1.0], dtype=torch.float64), h=1e-3)
    assert error.max_abs_error == pytest.approx(1e-3 * 1e-6 / 3, rel=1e-3)
    assert error.max_rel_error == pytest.approx(1e-6 / 3, rel=1e-3)


def test_errors_are_reported_per_input_in_order_and_empty_inputs_have_none():
    f = lambda x, y: (x * 2).sum() + (y**2).sum()  # noqa: E731
    x, empty = torch.ones(3, dtype=torch.float64), torch.ones(0, dtype=torch.float64)
    errors = compare_gradients(f, x, empty)
    assert [e.input_index for e in errors] == [0, 1]
    assert errors[1].max_abs_error == 0.0 and errors[1].max_rel_error == 0.0


def test_relative_error_means_nothing_below_the_rounding_level():
    """At a least-squares minimum the gradient is 0 and the central difference is rounding
    noise of about eps * |f| / h: max_rel_error is close to 1 for a correct backward, and
    max_abs_error stays at that level (the docstring says to read it there)."""
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(50, 3, dtype=torch.float64, generator=gen)
    b = 10 * torch.randn(50, dtype=torch.float64, generator=gen)
    w = torch.linalg.lstsq(a, b[:, None]).solution[:, 0]

    def f(w):
        return ((a @ w - b) ** 2).sum()

    (error,) = compare_gradients(f, w)
    level = torch.finfo(torch.float64).eps * f(w).item() / 1e-6
    assert error.max_rel_error > 0.5  # not a sign of a wrong backward here
    assert error.max_abs_error < 10 * level
