"""Differential tests: the ops `import loom.compat.v1 as tf` exposes against numpy (float64
references, or TF 1.15's rule where it differs from numpy: floordiv / floormod of floats,
sign(NaN), reductions over nothing), on shapes with zero-size dims, rank 0 and size-1
dims broadcast on either side, negative axes, keepdims, integer wrap-around and float
specials (NaN, +-Inf, -0, denormals); then each differentiable op's gradient against
central differences in float64, and TF's rules at the points where a gradient is a choice
(ties, kinks).

Fast by default (one seed). LOOM_DIFF_SEEDS=N sweeps N seeds of random shapes and values:

    LOOM_DIFF_SEEDS=50 PYTHONPATH=build/python /usr/bin/python3 -m pytest \
        python/tests/test_differential_ops.py
"""
import math
import os

import numpy as np
import pytest

import loom.compat.v1 as tf

SEEDS = list(range(int(os.environ.get("LOOM_DIFF_SEEDS", "1"))))

# Specials placed among random values: NaN, +-Inf, signed zeros, float32 denormals, halves
# (rounding), values near float32's range and exp's overflow.
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 1.0, -1.0, 0.5, -0.5, 1.5,
            2.5, -2.5, 3.4e38, -3.4e38, 1e-7, 88.0, -88.0, 100.0, -100.0]
INT32_EDGES = [0, 1, -1, 2, -2, 7, -7, 3, -3, 2**31 - 1, -2**31]


def run(build, *arrays):
    """build(*placeholders) in a fresh graph, run with `arrays` fed."""
    g = tf.Graph()
    with g.as_default():
        phs = [tf.placeholder(tf.as_dtype(a.dtype), a.shape) for a in arrays]
        out = build(*phs)
        with tf.Session(graph=g) as s:
            return s.run(out, dict(zip(phs, arrays)))


def assert_same(got, want, rtol=0.0, atol=0.0, zero_sign=False, what=""):
    """Same shape and dtype; NaN where want has NaN, the same infinities, finite values
    within atol + rtol * |want|; with zero_sign, zeros of the same sign."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, "%s: shape %s, want %s" % (what, got.shape, want.shape)
    assert got.dtype == want.dtype, "%s: dtype %s, want %s" % (what, got.dtype, want.dtype)
    if got.dtype.kind != "f":
        bad = got != want
        assert not bad.any(), "%s: %s, want %s (at %s)" % (
            what, got[bad][:5], want[bad][:5], np.argwhere(bad)[:5].tolist())
        return
    nan_bad = np.isnan(got) != np.isnan(want)
    assert not nan_bad.any(), "%s: NaN differs at %s: got %s, want %s" % (
        what, np.argwhere(nan_bad)[:5].tolist(), got[nan_bad][:5], want[nan_bad][:5])
    inf = np.isinf(want) | np.isinf(got)
    inf_bad = inf & (got != want)
    assert not inf_bad.any(), "%s: Inf differs: got %s, want %s" % (
        what, got[inf_bad][:5], want[inf_bad][:5])
    fin = np.isfinite(want)
    g, w = got[fin].astype(np.float64), want[fin].astype(np.float64)
    bad = np.abs(g - w) > atol + rtol * np.abs(w)
    assert not bad.any(), "%s: got %s, want %s" % (what, g[bad][:5], w[bad][:5])
    if zero_sign:
        z = want == 0
        sign_bad = np.signbit(got[z]) != np.signbit(want[z])
        assert not sign_bad.any(), "%s: the sign of a zero differs" % what


def tol(dtype):
    return 2e-5 if dtype == np.float32 else 1e-12


def values(rng, dtype, shape):
    """Random values of `shape` with the specials spread over random positions."""
    n = int(np.prod(shape))
    x = rng.normal(0, 3, n)
    if n:
        k = min(n, len(SPECIALS))
        x[rng.choice(n, k, replace=False)] = rng.choice(SPECIALS, k, replace=False)
    with np.errstate(over="ignore"):
        return x.astype(dtype).reshape(shape)


def random_shape(rng, max_rank=4):
    rank = int(rng.integers(0, max_rank + 1))
    return tuple(int(d) for d in rng.choice([0, 1, 2, 3, 5, 17], rank,
                                            p=[.08, .22, .2, .2, .2, .1]))


def reference(fn, dtype, *arrays):
    """fn over float64 copies, rounded to dtype."""
    with np.errstate(all="ignore"):
        want = np.asarray(fn(*[a.astype(np.float64) for a in arrays]))
        return want.astype(dtype) if want.dtype.kind == "f" else want


# --- element-wise, unary ------------------------------------------------------------------
def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _tf_sign(x):
    # TF 1.15's Sign: -1, 0 or 1; NaN gives 0 ("0 if x == 0 or tf.is_nan(x)"), not numpy's NaN.
    return np.where(np.isnan(x), 0.0, np.sign(x))


UNARY = [  # (name, tf function, reference, zeros keep their sign)
    ("negative", tf.negative, np.negative, True),
    ("abs", tf.abs, np.abs, True),
    ("square", tf.square, np.square, False),
    ("sign", tf.sign, _tf_sign, False),
    ("exp", tf.exp, np.exp, False),
    ("log", tf.log, np.log, False),
    ("log1p", tf.log1p, np.log1p, True),
    ("sqrt", tf.sqrt, np.sqrt, True),
    ("rsqrt", tf.rsqrt, lambda x: 1 / np.sqrt(x), False),
    ("reciprocal", tf.reciprocal, lambda x: 1 / x, True),
    ("floor", tf.floor, np.floor, True),
    ("ceil", tf.ceil, np.ceil, True),
    ("round", tf.round, np.round, True),  # halves to even, as TF's Round
    ("rint", tf.rint, np.rint, True),
    ("sin", tf.sin, np.sin, True),
    ("cos", tf.cos, np.cos, False),
    ("tan", tf.tan, np.tan, True),
    ("asin", tf.asin, np.arcsin, True),
    ("acos", tf.acos, np.arccos, False),
    ("atan", tf.atan, np.arctan, True),
    ("sinh", tf.sinh, np.sinh, True),
    ("cosh", tf.cosh, np.cosh, False),
    ("expm1", tf.expm1, np.expm1, True),
    ("erf", tf.erf, np.vectorize(math.erf, otypes=[np.float64]), True),
    ("sigmoid", tf.sigmoid, _np_sigmoid, False),
    ("tanh", tf.tanh, np.tanh, True),
    ("relu", tf.nn.relu, lambda x: np.where(np.isnan(x), x, np.maximum(x, 0)), False),
    ("relu6", tf.nn.relu6, lambda x: np.where(np.isnan(x), x, np.clip(x, 0, 6)), False),
    ("elu", tf.nn.elu, lambda x: np.where(x > 0, x, np.expm1(x)), False),
    ("selu", tf.nn.selu, lambda x: 1.0507009873554805 * np.where(
        x > 0, x, 1.6732632423543772 * np.expm1(x)), False),
    ("softplus", tf.nn.softplus, lambda x: np.logaddexp(0, x), False),
    ("softsign", tf.nn.softsign, lambda x: x / (1 + np.abs(x)), False),
    ("leaky_relu", tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x), False),
    ("log_sigmoid", tf.log_sigmoid, lambda x: -np.logaddexp(0, -x), False),
    ("is_nan", tf.is_nan, np.isnan, False),
    ("is_inf", tf.is_inf, np.isinf, False),
    ("is_finite", tf.is_finite, np.isfinite, False),
]
# Composites whose finite form differs from the reference's at the specials (swish of
# -inf is -inf * 0): checked on finite values.
UNARY_FINITE = [
    ("swish", tf.nn.swish, lambda x: x * _np_sigmoid(x)),
    ("reciprocal_no_nan", tf.math.reciprocal_no_nan, lambda x: np.where(x == 0, 0.0, 1 / x)),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,ref,zero_sign", UNARY, ids=[u[0] for u in UNARY])
def test_unary_against_numpy_with_specials(name, fn, ref, zero_sign, dtype, seed):
    rng = np.random.default_rng(seed)
    # Every special in a vector (the kernels' vector body and tail), then random shapes.
    for shape in [(len(SPECIALS) + 40,), (), (0,), random_shape(rng), random_shape(rng)]:
        x = values(rng, dtype, shape)
        if shape == ():
            x = np.asarray(rng.choice(SPECIALS), dtype)
        assert_same(run(fn, x), reference(ref, dtype, x), tol(dtype), tol(dtype),
                    zero_sign, "%s %s %s" % (name, dtype.__name__, shape))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,ref", UNARY_FINITE, ids=[u[0] for u in UNARY_FINITE])
def test_unary_composites_on_finite_values(name, fn, ref, dtype):
    x = np.concatenate([np.random.default_rng(0).normal(0, 3, 40), [0.0, -0.0, 80.0, -80.0]])
    x = x.astype(dtype)
    assert_same(run(fn, x), reference(ref, dtype, x), tol(dtype), tol(dtype), what=name)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name,fn,ref", [("negative", tf.negative, np.negative),
                                         ("abs", tf.abs, np.abs),
                                         ("square", tf.square, np.square),
                                         ("sign", tf.sign, np.sign)])
def test_integer_unary_wraps_as_twos_complement(name, fn, ref, dtype):
    x = np.array(INT32_EDGES, dtype)
    if dtype == np.int64:
        x = np.concatenate([x, np.array([2**63 - 1, -2**63], np.int64)])
    with np.errstate(all="ignore"):
        want = ref(x)  # abs(INT_MIN) and -INT_MIN are INT_MIN, as in TF's kernels
    assert_same(run(fn, x), want, what=name)


# --- element-wise, binary with broadcasting ------------------------------------------------
def _tf_floordiv(a, b):
    # TF's FloorDiv of floats is floor(x / y) (numpy's floor_divide goes through fmod:
    # -1e-40 // inf is -1 there, -0 in TF; inf // 1 is NaN there, inf in TF).
    return np.floor(a / b)


def _tf_floormod(a, b):
    # TF's FloorMod: fmod, then y added where the signs differ (keeps fmod's -0).
    m = np.fmod(a, b)
    return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)


BINARY = [  # (name, tf function, reference, zeros keep their sign); references in the dtype
    ("add", tf.add, np.add, True),
    ("subtract", tf.subtract, np.subtract, True),
    ("multiply", tf.multiply, np.multiply, True),
    ("realdiv", tf.realdiv, np.true_divide, True),
    ("truediv", lambda a, b: a / b, np.true_divide, True),
    ("maximum", tf.maximum, np.maximum, False),
    ("minimum", tf.minimum, np.minimum, False),
    ("pow", tf.pow, np.power, False),
    ("atan2", tf.atan2, np.arctan2, False),
    ("squared_difference", tf.squared_difference, lambda a, b: (a - b) ** 2, False),
    ("floordiv", tf.floordiv, _tf_floordiv, False),
    ("floormod", tf.floormod, _tf_floormod, True),
    ("equal", tf.equal, np.equal, False),
    ("not_equal", tf.not_equal, np.not_equal, False),
    ("less", tf.less, np.less, False),
    ("less_equal", tf.less_equal, np.less_equal, False),
    ("greater", tf.greater, np.greater, False),
    ("greater_equal", tf.greater_equal, np.greater_equal, False),
    ("divide_no_nan", tf.math.divide_no_nan,
     lambda a, b: np.where(b == 0, 0.0, a / np.where(b == 0, 1, b)), False),
]
# Size-1 dims broadcast on either side, zero-size dims, rank 0 against any rank, and the
# vector kernels' edges (a broadcast row of 17).
BROADCAST_SHAPES = [((), ()), ((), (3,)), ((3,), ()), ((2, 1), (1, 3)), ((0, 3), (1, 3)),
                    ((4, 1, 3), (2, 1)), ((1,), (5,)), ((2, 3), (2, 3)), ((2, 0), (2, 1)),
                    ((3, 1, 1), (1, 4, 1)), ((1, 1, 2, 1, 3), (2, 1, 4, 1)), ((5, 1), (5, 0)),
                    ((17, 1), (1, 17)), ((1, 17), (33, 17)), ((2, 1, 17), (3, 1))]


def _binary_in_dtype(ref, dtype):
    def f(a, b):
        with np.errstate(all="ignore"):
            want = np.asarray(ref(a, b))
        return want
    return f


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,ref,zero_sign", BINARY, ids=[b[0] for b in BINARY])
def test_binary_broadcasts_as_numpy(name, fn, ref, zero_sign, dtype, seed):
    rng = np.random.default_rng(seed)
    shapes = list(BROADCAST_SHAPES)
    if seed:  # the sweep: random broadcast-compatible pairs
        for _ in range(6):
            s = random_shape(rng)
            t = tuple(1 if rng.random() < 0.3 else d for d in s)[int(rng.integers(0, len(s) + 1)):]
            shapes.append((s, t) if rng.random() < 0.5 else (t, s))
    for sa, sb in shapes:
        a = rng.normal(0, 3, sa).astype(dtype)
        b = rng.normal(0, 3, sb).astype(dtype)
        want = reference(ref, dtype, a, b)
        assert_same(run(fn, a, b), want, tol(dtype), tol(dtype),
                    what="%s %s %s %s" % (name, dtype.__name__, sa, sb))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,ref,zero_sign", BINARY, ids=[b[0] for b in BINARY])
def test_binary_every_pair_of_specials(name, fn, ref, zero_sign, dtype):
    s = np.array(SPECIALS, np.float64)
    a, b = (v.ravel() for v in np.meshgrid(s, s))
    with np.errstate(over="ignore"):
        a, b = a.astype(dtype), b.astype(dtype)
    # The reference in the operands' own dtype, so float32 rounding is the kernel's.
    want = _binary_in_dtype(ref, dtype)(a, b)
    if want.dtype.kind == "f":
        want = want.astype(dtype)
    rtol = 2e-6 if dtype == np.float32 else 1e-15
    if name in ("pow", "atan2"):
        rtol = tol(dtype)
    got = np.asarray(run(fn, a, b))
    for i in range(len(a)):  # name the first pair that differs
        try:
            assert_same(got[i:i + 1], want[i:i + 1], rtol, 1e-45, zero_sign)
        except AssertionError as e:
            raise AssertionError("%s(%r, %r) in %s: %s" % (name, a[i], b[i], dtype.__name__, e))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name,fn,ref", [
    ("add", tf.add, np.add), ("subtract", tf.subtract, np.subtract),
    ("multiply", tf.multiply, np.multiply), ("maximum", tf.maximum, np.maximum),
    ("minimum", tf.minimum, np.minimum), ("floordiv", tf.floordiv, np.floor_divide),
    ("floormod", tf.floormod, np.mod), ("equal", tf.equal, np.equal),
    ("less", tf.less, np.less), ("greater_equal", tf.greater_equal, np.greater_equal)])
def test_integer_binary_every_pair_wraps_and_floors(name, fn, ref, dtype):
    v = np.array(INT32_EDGES, np.int64).astype(dtype)
    a, b = (x.ravel() for x in np.meshgrid(v, v))
    if name in ("floordiv", "floormod"):
        a, b = a[b != 0], b[b != 0]
    with np.errstate(all="ignore"):
        want = ref(a, b)  # INT_MIN // -1 wraps to INT_MIN, as numpy (and no SIGFPE)
    assert_same(run(fn, a, b), want, what=name)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("fn", [tf.floordiv, tf.floormod], ids=["floordiv", "floormod"])
def test_integer_division_by_zero_is_an_error(fn, dtype):
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(fn, np.array([5, 3], dtype), np.array([0, 1], dtype))


def test_integer_true_division_is_float64_as_tf():
    a, b = np.array([7, -7, 1], np.int32), np.array([2, 2, 3], np.int32)
    assert_same(run(lambda x, y: x / y, a, b), a / b, what="int32 / int32")


# --- casts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("src", [np.float32, np.float64])
@pytest.mark.parametrize("dst", [np.int32, np.int64, np.uint8, np.bool_, np.float32, np.float64])
def test_cast_of_floats_truncates_as_numpy_on_x86(src, dst):
    # NaN, Inf and out-of-range values give x86's "integer indefinite" (INT_MIN), as numpy
    # and TF on this CPU; -0 is false.
    x = np.array([np.nan, np.inf, -np.inf, 3.9, -3.9, 0.5, -0.5, 2.5, 3e9, -3e9, 1e20, 255.9,
                  256.0, -1.0, -0.0, 1e-45], src)
    with np.errstate(all="ignore"):
        want = x.astype(dst)
    assert_same(run(lambda t: tf.cast(t, tf.as_dtype(dst)), x), want, zero_sign=True,
                what="cast %s -> %s" % (src.__name__, np.dtype(dst).name))


@pytest.mark.parametrize("dst", [np.int32, np.uint8, np.float32, np.float64, np.bool_])
def test_cast_of_int64_wraps(dst):
    x = np.array([2**31 - 1, -2**31, 2**40 + 5, -1, 255, 256, 300, 2**63 - 1], np.int64)
    assert_same(run(lambda t: tf.cast(t, tf.as_dtype(dst)), x), x.astype(dst))


# --- reductions ----------------------------------------------------------------------------
def _np_logsumexp(x, axis, keepdims):
    return np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))


REDUCTIONS = [  # (name, tf function, numpy function, what it gives over no element)
    ("reduce_sum", tf.reduce_sum, np.sum, 0.0),
    ("reduce_mean", tf.reduce_mean, np.mean, np.nan),
    ("reduce_max", tf.reduce_max, np.max, -np.inf),
    ("reduce_min", tf.reduce_min, np.min, np.inf),
    ("reduce_prod", tf.reduce_prod, np.prod, 1.0),
    ("reduce_logsumexp", tf.reduce_logsumexp, _np_logsumexp, -np.inf),
    ("reduce_variance", tf.math.reduce_variance, np.var, np.nan),
    ("reduce_std", tf.math.reduce_std, np.std, np.nan),
    ("reduce_euclidean_norm", tf.math.reduce_euclidean_norm,
     lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims)), 0.0),
]
REDUCE_SHAPES = [(), (5,), (0,), (3, 4), (3, 0), (0, 4), (2, 3, 4), (1, 1, 7), (2, 1, 0, 3),
                 (1025,), (3, 1030)]


def _axes(rank):
    return [None] + list(range(-rank, rank)) + ([[0, -1]] if rank >= 2 else [])


def _reduce_reference(npf, empty, x, axis, keepdims):
    ax = tuple(axis) if isinstance(axis, list) else axis
    with np.errstate(all="ignore"):
        if x.size == 0 or (ax is not None and 0 in np.atleast_1d(np.take(x.shape, ax))):
            # numpy refuses max / min over nothing; Loom gives the identity (-inf / inf),
            # as TF 2 (TF 1.15 gave the float's lowest / highest finite value).
            out = np.sum(x, axis=ax, keepdims=keepdims)
            return np.full_like(out, empty) if np.ndim(out) else np.asarray(empty)
        return npf(x, axis=ax, keepdims=keepdims)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,npf,empty", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reductions_over_every_axis(name, fn, npf, empty, dtype, seed):
    rng = np.random.default_rng(seed)
    shapes = REDUCE_SHAPES if not seed else [random_shape(rng) for _ in range(6)]
    for shape in shapes:
        for axis in _axes(len(shape)):
            for keepdims in (False, True):
                x = rng.normal(0, 1, shape)
                if name == "reduce_prod":
                    x = 1 + 0.01 * x
                x = x.astype(dtype)
                want = np.asarray(_reduce_reference(npf, empty, x.astype(np.float64), axis,
                                                    keepdims)).astype(dtype)
                got = run(lambda t: fn(t, axis=axis, keepdims=keepdims), x)
                rt = 1e-4 if dtype == np.float32 else 1e-10
                assert_same(got, want, rt, rt, what="%s %s axis=%s keepdims=%s" % (
                    name, shape, axis, keepdims))


@pytest.mark.parametrize("name,fn,npf,empty", REDUCTIONS[:5], ids=[r[0] for r in REDUCTIONS[:5]])
def test_reductions_propagate_specials_anywhere(name, fn, npf, empty):
    # A NaN or Inf at any position of a 1030-long row (vector body and tail) reaches
    # the result, as numpy (session 16 fixed Max / Min).
    for special in (np.nan, np.inf, -np.inf):
        for pos in (0, 1, 15, 16, 17, 1023, 1029):
            x = np.ones((2, 1030), np.float32)
            x[1, pos] = special
            want = npf(x.astype(np.float64), axis=1, keepdims=False).astype(np.float32)
            assert_same(run(lambda t: fn(t, axis=1), x), want, 1e-5, 1e-5,
                        what="%s with %r at %d" % (name, special, pos))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_reductions(dtype):
    x = np.random.default_rng(3).integers(-100, 100, (3, 5)).astype(dtype)
    for axis in (None, 0, 1, -1):
        for fn, npf in ((tf.reduce_sum, np.sum), (tf.reduce_prod, np.prod),
                        (tf.reduce_max, np.max), (tf.reduce_min, np.min)):
            assert_same(run(lambda t: fn(t, axis=axis), x),
                        np.asarray(npf(x, axis=axis)).astype(dtype))
        # An integer mean truncates toward zero (TF's integer division).
        n = x.size if axis is None else x.shape[axis]
        assert_same(run(lambda t: tf.reduce_mean(t, axis=axis), x),
                    np.trunc(np.sum(x, axis=axis) / n).astype(dtype))
    big = np.array([2**31 - 1, 1], np.int32)
    assert_same(run(tf.reduce_sum, big), np.sum(big, dtype=np.int32))  # wraps


@pytest.mark.parametrize("shape", [(), (0,), (3, 4), (2, 0)])
def test_count_nonzero_and_arg_reductions(shape):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, shape).astype(np.float32)
    x.ravel()[:1] = -0.0  # -0 is zero
    for axis in [None] + list(range(-len(shape), len(shape))):
        assert_same(run(lambda t: tf.count_nonzero(t, axis=axis), x),
                    np.asarray(np.count_nonzero(x, axis=axis)).astype(np.int64))
        if axis is not None and x.size:
            for fn, npf in ((tf.argmax, np.argmax), (tf.argmin, np.argmin)):  # ties: the first
                assert_same(run(lambda t: fn(t, axis=axis), x), npf(x, axis=axis).astype(np.int64))


# --- shapes, slicing, gathers, scans, products -----------------------------------------------
X3 = np.random.default_rng(7).normal(0, 1, (2, 3, 4))
SHAPE_OPS = [  # (name, tf function of x [2, 3, 4], numpy function)
    ("reshape -1", lambda t: tf.reshape(t, [-1, 4]), lambda a: a.reshape(-1, 4)),
    ("transpose", tf.transpose, lambda a: a.T),
    ("transpose perm", lambda t: tf.transpose(t, [1, 0, 2]), lambda a: a.transpose(1, 0, 2)),
    ("expand_dims -1", lambda t: tf.expand_dims(t, -1), lambda a: a[..., None]),
    ("expand_dims -4", lambda t: tf.expand_dims(t, -4), lambda a: a[None]),
    ("squeeze", lambda t: tf.squeeze(t[:, :1, :1]), lambda a: np.squeeze(a[:, :1, :1])),
    ("squeeze -1", lambda t: tf.squeeze(t[:, :, :1], -1), lambda a: a[:, :, 0]),
    ("tile", lambda t: tf.tile(t, [2, 1, 3]), lambda a: np.tile(a, [2, 1, 3])),
    ("tile 0", lambda t: tf.tile(t, [0, 1, 3]), lambda a: np.tile(a, [0, 1, 3])),
    ("concat -1", lambda t: tf.concat([t, t * 2], -1), lambda a: np.concatenate([a, a * 2], -1)),
    ("concat empty", lambda t: tf.concat([t[:0], t], 0), lambda a: np.concatenate([a[:0], a])),
    ("stack -1", lambda t: tf.stack([t, t * 2], -1), lambda a: np.stack([a, a * 2], -1)),
    ("unstack 1", lambda t: tf.unstack(t, axis=1), lambda a: [a[:, i] for i in range(3)]),
    ("unstack -1", lambda t: tf.unstack(t, axis=-1), lambda a: [a[..., i] for i in range(4)]),
    ("split -1", lambda t: tf.split(t, 2, -1), lambda a: np.split(a, 2, -1)),
    ("slice", lambda t: tf.slice(t, [1, 0, 1], [1, -1, 2]), lambda a: a[1:2, :, 1:3]),
    ("pad", lambda t: tf.pad(t, [[1, 0], [0, 2], [1, 1]]),
     lambda a: np.pad(a, [[1, 0], [0, 2], [1, 1]])),
    ("pad constant", lambda t: tf.pad(t, [[1, 0], [0, 2], [1, 1]], constant_values=-3),
     lambda a: np.pad(a, [[1, 0], [0, 2], [1, 1]], constant_values=-3)),
    ("pad reflect", lambda t: tf.pad(t, [[1, 1], [2, 0], [1, 2]], mode="REFLECT"),
     lambda a: np.pad(a, [[1, 1], [2, 0], [1, 2]], mode="reflect")),
    ("pad symmetric", lambda t: tf.pad(t, [[1, 1], [3, 0], [1, 2]], mode="SYMMETRIC"),
     lambda a: np.pad(a, [[1, 1], [3, 0], [1, 2]], mode="symmetric")),
    ("reverse", lambda t: tf.reverse(t, [1]), lambda a: a[:, ::-1]),
    ("reverse -1 0", lambda t: tf.reverse(t, [-1, 0]), lambda a: a[::-1, :, ::-1]),
    ("t[-1]", lambda t: t[-1], lambda a: a[-1]),
    ("t[::-1]", lambda t: t[::-1], lambda a: a[::-1]),
    ("t[:, ::-2]", lambda t: t[:, ::-2], lambda a: a[:, ::-2]),
    ("t[:, 1:-1]", lambda t: t[:, 1:-1], lambda a: a[:, 1:-1]),
    ("t[-5:10]", lambda t: t[-5:10], lambda a: a[-5:10]),
    ("t[:, 3:1]", lambda t: t[:, 3:1], lambda a: a[:, 3:1]),
    ("t[..., 1]", lambda t: t[..., 1], lambda a: a[..., 1]),
    ("t[:, None, 1]", lambda t: t[:, None, 1], lambda a: a[:, None, 1]),
    ("t[None, ..., None]", lambda t: t[None, ..., None], lambda a: a[None, ..., None]),
    ("t[-1, -1, -1]", lambda t: t[-1, -1, -1], lambda a: a[-1, -1, -1]),
    ("t[:, 2::-1]", lambda t: t[:, 2::-1], lambda a: a[:, 2::-1]),
    ("t[:, -2::-1]", lambda t: t[:, -2::-1], lambda a: a[:, -2::-1]),
    ("t[:, :-4:-1]", lambda t: t[:, :-4:-1], lambda a: a[:, :-4:-1]),
    ("t[:, 0:3:5]", lambda t: t[:, 0:3:5], lambda a: a[:, 0:3:5]),
    ("broadcast_to", lambda t: tf.broadcast_to(t[:, :1], [2, 3, 4]),
     lambda a: np.broadcast_to(a[:, :1], (2, 3, 4))),
    ("matrix_transpose", tf.matrix_transpose, lambda a: a.transpose(0, 2, 1)),
    ("matrix_diag_part", tf.matrix_diag_part, lambda a: np.stack([np.diag(m) for m in a])),
    ("band_part 1 0", lambda t: tf.matrix_band_part(t, 1, 0),
     lambda a: np.stack([np.tril(np.triu(m, -1), 0) for m in a])),
    ("band_part -1 1", lambda t: tf.matrix_band_part(t, -1, 1),
     lambda a: np.stack([np.tril(m, 1) for m in a])),
    ("trace", tf.trace, lambda a: np.trace(a, axis1=1, axis2=2)),
    ("meshgrid", lambda t: tf.meshgrid(t[0, 0], t[0, :, 0]),
     lambda a: np.meshgrid(a[0, 0], a[0, :, 0])),
    ("where x y", lambda t: tf.where(t > 0, t, -t), lambda a: np.where(a > 0, a, -a)),
    ("where_v2 broadcast", lambda t: tf.where_v2(t[:, :1] > 0, t, 0.0),
     lambda a: np.where(a[:, :1] > 0, a, 0.0)),
    ("where coordinates", lambda t: tf.where(t > 0.5), lambda a: np.argwhere(a > 0.5)),
    ("boolean_mask", lambda t: tf.boolean_mask(t, t[:, :, 0] > 0), lambda a: a[a[:, :, 0] > 0]),
    ("cumsum", lambda t: tf.cumsum(t, 1), lambda a: np.cumsum(a, 1)),
    ("cumsum exclusive", lambda t: tf.cumsum(t, -1, exclusive=True),
     lambda a: np.cumsum(a, -1) - a),
    ("cumsum reverse", lambda t: tf.cumsum(t, 0, reverse=True),
     lambda a: np.cumsum(a[::-1], 0)[::-1]),
    ("cumsum reverse exclusive", lambda t: tf.cumsum(t, 2, reverse=True, exclusive=True),
     lambda a: np.cumsum(a[..., ::-1], 2)[..., ::-1] - a),
    ("cumprod", lambda t: tf.cumprod(t, 1), lambda a: np.cumprod(a, 1)),
    ("cumprod exclusive reverse", lambda t: tf.cumprod(t, 2, exclusive=True, reverse=True),
     lambda a: np.concatenate([np.cumprod(a[..., ::-1], 2)[..., ::-1][..., 1:],
                               np.ones_like(a[..., :1])], 2)),
    ("reverse_sequence", lambda t: tf.reverse_sequence(t, [3, 1], seq_axis=1, batch_axis=0),
     lambda a: np.stack([a[0, ::-1], a[1]])),
    ("clip_by_value", lambda t: tf.clip_by_value(t, -0.5, 0.5), lambda a: np.clip(a, -.5, .5)),
    ("add_n", lambda t: tf.add_n([t, t, 2 * t]), lambda a: 4 * a),
    ("tensordot 2 axes", lambda t: tf.tensordot(t, t, [[1, 2], [1, 2]]),
     lambda a: np.tensordot(a, a, [[1, 2], [1, 2]])),
    ("tensordot 1", lambda t: tf.tensordot(t, tf.transpose(t), 1),
     lambda a: np.tensordot(a, a.T, 1)),
    ("einsum bij,bkj", lambda t: tf.einsum("bij,bkj->bik", t, t),
     lambda a: np.einsum("bij,bkj->bik", a, a)),
    ("einsum bii", lambda t: tf.einsum("bii->b", t[:, :, :3]),
     lambda a: np.einsum("bii->b", a[:, :, :3])),
    ("einsum bij->j", lambda t: tf.einsum("bij->j", t), lambda a: np.einsum("bij->j", a)),
    ("einsum outer", lambda t: tf.einsum("i,j->ij", t[0, 0], t[1, 1]),
     lambda a: np.einsum("i,j->ij", a[0, 0], a[1, 1])),
    ("einsum ellipsis", lambda t: tf.einsum("...ij,...jk->...ik", t, tf.transpose(t, [0, 2, 1])),
     lambda a: np.einsum("...ij,...jk->...ik", a, a.transpose(0, 2, 1))),
    ("einsum abc->cab", lambda t: tf.einsum("abc->cab", t), lambda a: np.einsum("abc->cab", a)),
    ("matmul transpose_a", lambda t: tf.matmul(t, t, transpose_a=True),
     lambda a: a.transpose(0, 2, 1) @ a),
    ("matmul transpose_b", lambda t: tf.matmul(t, t, transpose_b=True),
     lambda a: a @ a.transpose(0, 2, 1)),
    ("matmul broadcast", lambda t: tf.matmul(t, t[0], transpose_b=True), lambda a: a @ a[0].T),
    ("matmul k=0", lambda t: tf.matmul(t[0, :, :0], t[1, :0, :]),
     lambda a: a[0, :, :0] @ a[1, :0, :]),
    ("matmul m=0", lambda t: tf.matmul(t[0, :0, :], t[1], transpose_b=True),
     lambda a: a[0, :0, :] @ a[1].T),
    ("norm", tf.norm, lambda a: np.linalg.norm(a.ravel())),
    ("norm 1 axis -1", lambda t: tf.norm(t, ord=1, axis=-1), lambda a: np.linalg.norm(a, 1, axis=-1)),
    ("norm inf axis 1", lambda t: tf.norm(t, ord=np.inf, axis=1),
     lambda a: np.linalg.norm(a, np.inf, axis=1)),
    ("norm 3", lambda t: tf.norm(t, ord=3, axis=1), lambda a: np.linalg.norm(a, 3, axis=1)),
    ("norm fro", lambda t: tf.norm(t, ord="fro", axis=[1, 2]),
     lambda a: np.linalg.norm(a, "fro", axis=(1, 2))),
    ("norm matrix 1", lambda t: tf.norm(t, ord=1, axis=[1, 2]),
     lambda a: np.linalg.norm(a, 1, axis=(1, 2))),
    ("norm matrix inf", lambda t: tf.norm(t, ord=np.inf, axis=[1, 2]),
     lambda a: np.linalg.norm(a, np.inf, axis=(1, 2))),
    ("l2_normalize", lambda t: tf.nn.l2_normalize(t, -1),
     lambda a: a / np.sqrt(np.maximum((a * a).sum(-1, keepdims=True), 1e-12))),
    ("softmax", tf.nn.softmax, lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True)),
    ("softmax axis 1", lambda t: tf.nn.softmax(t, axis=1),
     lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
    ("log_softmax", tf.nn.log_softmax, lambda a: a - np.log(np.exp(a).sum(-1, keepdims=True))),
    ("log_softmax axis 0", lambda t: tf.nn.log_softmax(t, axis=0),
     lambda a: a - np.log(np.exp(a).sum(0, keepdims=True))),
    ("moments", lambda t: tf.nn.moments(t, [0, 1]), lambda a: (a.mean((0, 1)), a.var((0, 1)))),
    ("top_k", lambda t: tf.nn.top_k(t, 2).values, lambda a: -np.sort(-a, -1)[..., :2]),
    ("sort", tf.sort, lambda a: np.sort(a, -1)),
    ("sort axis 0 descending", lambda t: tf.sort(t, 0, "DESCENDING"), lambda a: -np.sort(-a, 0)),
    ("argsort", lambda t: tf.argsort(t, 1),
     lambda a: np.argsort(a, 1, kind="stable").astype(np.int32)),
    ("bias_add", lambda t: tf.nn.bias_add(t, t[0, 0]), lambda a: a + a[0, 0]),
    ("xlogy", lambda t: tf.math.xlogy(t, tf.abs(t)), lambda a: a * np.log(np.abs(a))),
    ("crelu", tf.nn.crelu,
     lambda a: np.concatenate([np.maximum(a, 0), np.maximum(-a, 0)], -1)),
    ("polyval", lambda t: tf.math.polyval([1.0, -2.0, 3.0], t),
     lambda a: np.polyval([1.0, -2.0, 3.0], a)),
    ("sigmoid cross entropy", lambda t: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.sigmoid(t * 0.3), logits=t),
     lambda a: np.maximum(a, 0) - a * _np_sigmoid(a * 0.3) + np.log1p(np.exp(-np.abs(a)))),
    ("softmax cross entropy", lambda t: tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=tf.nn.softmax(t * 0.5), logits=t),
     lambda a: -(np.exp(a * .5) / np.exp(a * .5).sum(-1, keepdims=True) *
                 (a - np.log(np.exp(a).sum(-1, keepdims=True)))).sum(-1)),
    ("l2_loss", tf.nn.l2_loss, lambda a: (a * a).sum() / 2),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,ref", SHAPE_OPS, ids=[c[0] for c in SHAPE_OPS])
def test_shape_and_product_ops_against_numpy(name, fn, ref, dtype):
    x = X3.astype(dtype)
    got = run(fn, x)
    want = ref(X3)
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want), name
    else:
        got, want = [got], [want]
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert_same(g, w.astype(dtype) if w.dtype == np.float64 else w, 1e-5, 1e-5, what=name)


P = np.arange(15, dtype=np.float32).reshape(5, 3) * 1.5 - 4
GATHERS = [  # (name, tf function of p [5, 3], numpy value)
    ("gather", lambda t: tf.gather(t, [[4, 0], [2, 2]]), P[[[4, 0], [2, 2]]]),
    ("gather axis 1", lambda t: tf.gather(t, [2, 0, 0], axis=1), P[:, [2, 0, 0]]),
    ("gather axis -1", lambda t: tf.gather(t, [2, 0, 0], axis=-1), P[:, [2, 0, 0]]),
    ("gather int64", lambda t: tf.gather(t, np.array([1, 3], np.int64)), P[[1, 3]]),
    ("gather nothing", lambda t: tf.gather(t, np.zeros([0], np.int32)), P[[]]),
    ("gather scalar", lambda t: tf.gather(t, 3), P[3]),
    ("gather_nd", lambda t: tf.gather_nd(t, [[1, 2], [4, 0]]), P[[1, 4], [2, 0]]),
    ("gather_nd rows", lambda t: tf.gather_nd(t, [[1], [4]]), P[[1, 4]]),
    ("scatter_nd repeats add", lambda t: tf.scatter_nd([[1], [3], [1]], t[:3], [6, 3]),
     np.stack([0 * P[0], P[0] + P[2], 0 * P[0], P[1], 0 * P[0], 0 * P[0]])),
    ("unsorted_segment_sum drops -1", lambda t: tf.unsorted_segment_sum(t, [2, 0, 2, -1, 1], 4),
     np.stack([P[1], P[4], P[0] + P[2], 0 * P[0]])),
    ("segment_sum", lambda t: tf.segment_sum(t, [0, 0, 2, 2, 3]),
     np.stack([P[0] + P[1], 0 * P[0], P[2] + P[3], P[4]])),
    ("unsorted_segment_mean", lambda t: tf.unsorted_segment_mean(t, [2, 0, 2, 0, 1], 4),
     np.stack([(P[1] + P[3]) / 2, P[4], (P[0] + P[2]) / 2, 0 * P[0]])),
    ("bincount", lambda t: tf.bincount([1, 1, 4, 0]), np.bincount([1, 1, 4, 0]).astype(np.int32)),
    ("unique", lambda t: tf.unique([3, 1, 3, 2, 1])[0], np.array([3, 1, 2], np.int32)),
    ("unique idx", lambda t: tf.unique([3, 1, 3, 2, 1])[1], np.array([0, 1, 0, 2, 1], np.int32)),
    ("embedding_lookup", lambda t: tf.nn.embedding_lookup(t, [[0, 4], [4, 4]]), P[[[0, 4], [4, 4]]]),
    ("in_top_k", lambda t: tf.nn.in_top_k(t, [0, 1, 2, 0, 1], 2),
     np.array([(P[i] > P[i, c]).sum() < 2 for i, c in enumerate([0, 1, 2, 0, 1])])),
    ("one_hot out of range is a row of off_value", lambda t: tf.one_hot([5, -1, 1], 3),
     np.array([[0, 0, 0], [0, 0, 0], [0, 1, 0]], np.float32)),
    ("sequence_mask", lambda t: tf.sequence_mask([1, 3, 0, -1], 4),
     np.arange(4)[None] < np.array([1, 3, 0, -1])[:, None]),
]


@pytest.mark.parametrize("name,fn,want", GATHERS, ids=[c[0] for c in GATHERS])
def test_gathers_scatters_and_segments(name, fn, want):
    assert_same(run(fn, P), want, 1e-6, 1e-6, what=name)


INDEX_ERRORS = [  # TF's CPU kernels refuse these when the op runs; so does Loom
    ("gather past the end", lambda t: tf.gather(t, [5])),
    ("gather negative", lambda t: tf.gather(t, [-1])),
    ("gather_nd past the end", lambda t: tf.gather_nd(t, [[0, 3]])),
    ("scatter_nd past the end", lambda t: tf.scatter_nd([[6]], t[:1], [6, 3])),
    ("unsorted_segment_sum id >= num_segments",
     lambda t: tf.unsorted_segment_sum(t, [0, 1, 2, 3, 4], 4)),
    ("sparse_softmax_cross_entropy label past the classes",
     lambda t: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 3], logits=t[:2])),
    ("sparse_softmax_cross_entropy label -1",
     lambda t: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, -1], logits=t[:2])),
]


@pytest.mark.parametrize("name,fn", INDEX_ERRORS, ids=[c[0] for c in INDEX_ERRORS])
def test_indices_out_of_range_are_errors(name, fn):
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(fn, P)


# --- gradients against central differences (float64) -----------------------------------------
def _gradient_check(fn, arrays, seed=0, h=1e-6, rtol=1e-5):
    rng = np.random.default_rng(seed)
    shape = np.shape(run(fn, *arrays))  # some outputs' shapes are known only when they run
    g = tf.Graph()
    with g.as_default():
        phs = [tf.placeholder(tf.float64, a.shape) for a in arrays]
        out = fn(*phs)
        w = rng.normal(0, 1, shape)  # a random cotangent
        y = tf.reduce_sum(out * w)
        grads = tf.gradients(y, phs)
        with tf.Session(graph=g) as s:
            feed = dict(zip(phs, arrays))
            got = s.run([gr if gr is not None else tf.zeros_like(p) for gr, p in zip(grads, phs)],
                        feed)
            for k, a in enumerate(arrays):
                num = np.zeros_like(a)
                for i in np.ndindex(*a.shape):
                    moved = dict(feed)
                    up, down = a.copy(), a.copy()
                    up[i] += h
                    down[i] -= h
                    moved[phs[k]] = up
                    y_up = s.run(y, moved)
                    moved[phs[k]] = down
                    num[i] = (y_up - s.run(y, moved)) / (2 * h)
                bad = np.abs(got[k] - num) > rtol * (1 + np.abs(num))
                assert not bad.any(), "input %d at %s: tf.gradients %s, numeric %s" % (
                    k, np.argwhere(bad)[:3].tolist(), got[k][bad][:3], num[bad][:3])


_R = np.random.default_rng(11)
A = _R.normal(0, 1, (2, 3))
B = _R.normal(0, 1, (3, 4))
POS = _R.uniform(0.5, 2, (2, 3))
T3 = _R.normal(0, 1, (2, 3, 4))
M3 = _R.normal(0, 1, (3, 3))
GRADIENTS = [(name, fn, A) for name, fn in [
    ("abs", tf.abs), ("negative", tf.negative), ("square", tf.square), ("exp", tf.exp),
    ("sin", tf.sin), ("cos", tf.cos), ("tan", tf.tan), ("atan", tf.atan), ("sinh", tf.sinh),
    ("cosh", tf.cosh), ("expm1", tf.expm1), ("erf", tf.erf), ("sigmoid", tf.sigmoid),
    ("tanh", tf.tanh), ("relu", tf.nn.relu), ("relu6", lambda x: tf.nn.relu6(4 * x)),
    ("elu", tf.nn.elu), ("selu", tf.nn.selu), ("softplus", tf.nn.softplus),
    ("softsign", tf.nn.softsign), ("leaky_relu", tf.nn.leaky_relu), ("swish", tf.nn.swish),
    ("log_sigmoid", tf.log_sigmoid), ("softmax", tf.nn.softmax),
    ("log_softmax", tf.nn.log_softmax), ("softmax axis 0", lambda x: tf.nn.softmax(x, axis=0)),
    ("l2_normalize", lambda x: tf.nn.l2_normalize(x, -1)),
    ("clip_by_value", lambda x: tf.clip_by_value(x, -0.5, 0.5)), ("crelu", tf.nn.crelu),
    ("l2_loss", tf.nn.l2_loss), ("polyval", lambda x: tf.math.polyval([1.0, -2.0, 3.0], x)),
    ("sparse softmax cross entropy", lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=[2, 0], logits=x)),
    ("broadcast_to", lambda x: tf.broadcast_to(x, [3, 2, 3])),
    ("expand_dims, squeeze", lambda x: tf.squeeze(tf.expand_dims(x, 1), 1)),
    ("where", lambda x: tf.where(x > 0, x, x * x)),
]] + [(name, fn, POS) for name, fn in [
    ("log", tf.log), ("log1p", tf.log1p), ("sqrt", tf.sqrt), ("rsqrt", tf.rsqrt),
    ("reciprocal", tf.reciprocal), ("asin", lambda x: tf.asin(x / 2.5)),
    ("acos", lambda x: tf.acos(x / 2.5)),
]] + [(name, fn, T3) for name, fn in [
    ("reduce_sum axis 1", lambda x: tf.reduce_sum(x, 1)),
    ("reduce_sum keepdims", lambda x: tf.reduce_sum(x, keepdims=True)),
    ("reduce_mean -1", lambda x: tf.reduce_mean(x, -1)),
    ("reduce_mean [0, 2] keepdims", lambda x: tf.reduce_mean(x, [0, 2], keepdims=True)),
    ("reduce_max", lambda x: tf.reduce_max(x, 1)), ("reduce_min", lambda x: tf.reduce_min(x, -1)),
    ("reduce_prod", lambda x: tf.reduce_prod(x, 1)),
    ("reduce_logsumexp", lambda x: tf.reduce_logsumexp(x, 1)),
    ("reduce_variance", lambda x: tf.math.reduce_variance(x, 1)),
    ("reduce_std", lambda x: tf.math.reduce_std(x, -1)),
    ("norm", lambda x: tf.norm(x, axis=-1)), ("norm 3", lambda x: tf.norm(x, ord=3, axis=-1)),
    ("norm matrix 1", lambda x: tf.norm(x, ord=1, axis=[1, 2])),
    ("cumsum", lambda x: tf.cumsum(x, 1)),
    ("cumsum exclusive reverse", lambda x: tf.cumsum(x, -1, exclusive=True, reverse=True)),
    ("cumprod", lambda x: tf.cumprod(x, 1)),
    ("cumprod exclusive reverse", lambda x: tf.cumprod(x, -1, exclusive=True, reverse=True)),
    ("transpose", lambda x: tf.transpose(x, [2, 0, 1])),
    ("reshape", lambda x: tf.reshape(x, [4, -1])), ("tile", lambda x: tf.tile(x, [2, 1, 3])),
    ("split", lambda x: tf.split(x, 2, -1)[1]), ("unstack", lambda x: tf.unstack(x, axis=1)[2]),
    ("slice", lambda x: tf.slice(x, [0, 1, 1], [2, 2, -1])),
    ("strided slice", lambda x: x[:, ::-2, 1:]), ("strided newaxis", lambda x: x[..., None, -1]),
    ("pad", lambda x: tf.pad(x, [[1, 0], [0, 2], [1, 1]])),
    ("pad reflect", lambda x: tf.pad(x, [[1, 1], [2, 0], [1, 2]], mode="REFLECT")),
    ("pad symmetric", lambda x: tf.pad(x, [[1, 1], [2, 0], [1, 2]], mode="SYMMETRIC")),
    ("reverse", lambda x: tf.reverse(x, [-1, 0])),
    ("gather axis 1", lambda x: tf.gather(x, [[2, 0], [2, 2]], axis=1)),
    ("gather repeats", lambda x: tf.gather(x, [1, 1, 0])),
    ("gather_nd", lambda x: tf.gather_nd(x, [[1, 2], [0, 0], [1, 2]])),
    ("top_k", lambda x: tf.nn.top_k(x, 2).values), ("sort", lambda x: tf.sort(x, 1)),
    ("reverse_sequence", lambda x: tf.reverse_sequence(x, [3, 1], seq_axis=1, batch_axis=0)),
    ("matrix_band_part", lambda x: tf.matrix_band_part(x, 1, 0)),
    ("matrix_diag_part", tf.matrix_diag_part), ("trace", tf.trace),
    ("moments variance", lambda x: tf.nn.moments(x, [0, 1])[1]),
    ("einsum bij,bkj", lambda x: tf.einsum("bij,bkj->bik", x, x)),
]] + [(name, fn, M3) for name, fn in [
    ("scatter_nd", lambda x: tf.scatter_nd([[1], [3], [1]], x, [5, 3])),
    ("unsorted_segment_sum", lambda x: tf.unsorted_segment_sum(x, [2, -1, 2], 4)),
    ("segment_sum", lambda x: tf.segment_sum(x, [0, 0, 2])),
    ("unsorted_segment_mean", lambda x: tf.unsorted_segment_mean(x, [2, 0, 2], 4)),
    ("boolean_mask", lambda x: tf.boolean_mask(x, tf.constant([True, False, True]))),
    ("einsum ii->", lambda x: tf.einsum("ii->", x)), ("einsum ii->i", lambda x: tf.einsum("ii->i", x)),
]]
GRADIENTS2 = [  # two inputs
    ("add broadcast", lambda a, b: a + b, A, A[:1]),
    ("subtract broadcast", lambda a, b: a - b, A[:, :1], A),
    ("multiply by a scalar", lambda a, b: a * b, A, np.array(1.5)),
    ("truediv broadcast", lambda a, b: a / b, A, POS[:1]),
    ("pow", tf.pow, POS, A), ("pow of negatives", tf.pow, A, np.full((2, 3), 2.0)),
    ("maximum", tf.maximum, A, A[::-1] + 0.1), ("minimum", tf.minimum, A, A[::-1] + 0.1),
    ("squared_difference", tf.squared_difference, A, A[:1]), ("atan2", tf.atan2, A, POS),
    ("floormod", tf.floormod, A * 3, POS), ("xlogy", tf.math.xlogy, A, POS),
    ("xdivy", tf.math.xdivy, A, POS), ("divide_no_nan", tf.math.divide_no_nan, A, POS),
    ("matmul", tf.matmul, A, B),
    ("matmul transpose_a", lambda a, b: tf.matmul(a, b, transpose_a=True), A.T.copy(), B),
    ("matmul transpose_b", lambda a, b: tf.matmul(a, b, transpose_b=True), A, B.T.copy()),
    ("batch matmul broadcast", tf.matmul, T3, _R.normal(0, 1, (4, 2))),
    ("batch matmul broadcast both", tf.matmul, _R.normal(0, 1, (1, 3, 2)),
     _R.normal(0, 1, (2, 2, 3))),
    ("einsum ij,jk", lambda a, b: tf.einsum("ij,jk->ik", a, b), A, B),
    ("tensordot", lambda a, b: tf.tensordot(a, b, 1), A, B),
    ("concat", lambda a, b: tf.concat([a, b], 0), A, A[:1]),
    ("stack", lambda a, b: tf.stack([a, b], -1), A, A), ("add_n", lambda a, b: tf.add_n([a, b, a]), A, A),
    ("where both branches", lambda a, b: tf.where(a > 0, a, b), A, A[::-1].copy()),
    ("sigmoid cross entropy", lambda x, l: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=l, logits=x), A, _R.uniform(0, 1, (2, 3))),
    ("softmax cross entropy", lambda x, l: tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=l, logits=x), A, _R.dirichlet([1, 1, 1], 2)),
    ("weighted cross entropy", lambda x, l: tf.nn.weighted_cross_entropy_with_logits(l, x, 2.0),
     A, _R.uniform(0, 1, (2, 3))),
    ("bias_add", tf.nn.bias_add, T3, _R.normal(0, 1, 4)),
]


@pytest.mark.parametrize("name,fn,x", GRADIENTS, ids=[c[0] for c in GRADIENTS])
def test_gradient_against_central_differences(name, fn, x):
    _gradient_check(fn, [x])


@pytest.mark.parametrize("name,fn,a,b", GRADIENTS2, ids=[c[0] for c in GRADIENTS2])
def test_gradient_of_two_inputs_against_central_differences(name, fn, a, b):
    _gradient_check(fn, [np.asarray(a, np.float64), np.asarray(b, np.float64)])


def _grads(fn, *arrays):
    g = tf.Graph()
    with g.as_default():
        phs = [tf.placeholder(tf.float64, np.shape(a)) for a in arrays]
        grads = tf.gradients(tf.reduce_sum(fn(*phs)), phs)
        with tf.Session(graph=g) as s:
            return s.run([gr if gr is not None else tf.zeros_like(p) for gr, p in zip(grads, phs)],
                         {p: np.asarray(a, np.float64) for p, a in zip(phs, arrays)})


TIE_RULES = [  # where the derivative is a choice, TF 1.15's choice
    ("maximum: x where x >= y", tf.maximum, ([1.0, 2.0, 2.0, 0.0], [1.0, 1.0, 3.0, 0.0]),
     [[1, 1, 0, 1], [0, 0, 1, 0]]),
    ("minimum: x where x <= y", tf.minimum, ([1.0, 2.0, 2.0, 0.0], [1.0, 1.0, 3.0, 0.0]),
     [[1, 0, 1, 1], [0, 1, 0, 0]]),
    ("reduce_max: split among ties", lambda x: tf.reduce_max(x), ([1.0, 3.0, 3.0, 2.0],),
     [[0, .5, .5, 0]]),
    ("reduce_min: split among ties", lambda x: tf.reduce_min(x, 1),
     ([[1.0, 1.0, 3.0], [2.0, 0.0, 0.0]],), [[[.5, .5, 0], [0, .5, .5]]]),
    ("relu: 0 at 0", tf.nn.relu, ([0.0, -0.0, 1.0],), [[0, 0, 1]]),
    ("relu6: 0 at 0 and 6", tf.nn.relu6, ([0.0, 6.0, 3.0],), [[0, 0, 1]]),
    ("leaky_relu: alpha at 0", tf.nn.leaky_relu, ([0.0, 1.0, -1.0],), [[.2, 1, .2]]),
    ("abs: 0 at 0", tf.abs, ([0.0, -0.0, -2.0],), [[0, 0, -1]]),
    ("clip_by_value: 1 at the bounds", lambda x: tf.clip_by_value(x, -1.0, 1.0),
     ([-1.0, 1.0, 2.0, -2.0, 0.5],), [[1, 1, 0, 0, 1]]),
    ("elu: 1 at 0", tf.nn.elu, ([0.0, -1.0],), [[1, np.exp(-1)]]),
    ("sqrt: inf at 0", tf.sqrt, ([0.0, 4.0],), [[np.inf, .25]]),
    ("top_k: ties in index order", lambda x: tf.nn.top_k(x, 2).values * [1.0, 10.0],
     ([[3.0, 5.0, 5.0, 1.0]],), [[[0, 1, 10, 0]]]),
    ("max_pool: the first maximum", lambda x: tf.nn.max_pool(x, [1, 2, 2, 1], [1, 2, 2, 1],
                                                              "VALID"),
     (np.ones((1, 2, 2, 1)),), [np.array([1.0, 0, 0, 0]).reshape(1, 2, 2, 1)]),
    ("pow: 0 ** y", tf.pow, ([0.0, 0.0, -2.0], [2.0, 0.5, 2.0]), [[0, np.inf, -4], [0, 0, 0]]),
    ("divide_no_nan: 0 where y is 0", tf.math.divide_no_nan, ([1.0, 2.0], [0.0, 2.0]),
     [[0, .5], [0, -.5]]),
    ("xlogy: 0 where x is 0", tf.math.xlogy, ([0.0, 1.0], [0.0, 2.0]),
     [[0, np.log(2)], [0, .5]]),
    ("reduce_logsumexp: 0 at -inf", tf.reduce_logsumexp, ([-np.inf, 0.0, 1.0],),
     [[0, 1 / (1 + np.e), np.e / (1 + np.e)]]),
    ("softplus: no overflow", tf.nn.softplus, ([100.0, 800.0],), [[1, 1]]),
    ("sigmoid cross entropy: no overflow", lambda x: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.constant([1.0, 0.0], tf.float64), logits=x), ([-800.0, 800.0],), [[-1, 1]]),
    ("log_softmax: no overflow", lambda x: tf.nn.log_softmax(x)[0], ([[1000.0, 0.0]],),
     [[[-1, 1]]]),
    ("reduce_prod: one zero", lambda x: tf.reduce_prod(x), ([2.0, 0.0, 3.0],), [[0, 6, 0]]),
    ("reduce_prod: two zeros", lambda x: tf.reduce_prod(x), ([2.0, 0.0, 3.0, 0.0],),
     [[0, 0, 0, 0]]),
]


@pytest.mark.parametrize("name,fn,inputs,want", TIE_RULES, ids=[c[0] for c in TIE_RULES])
def test_gradient_at_ties_and_kinks_is_tf_1_15s(name, fn, inputs, want):
    for got, w in zip(_grads(fn, *inputs), want):
        assert_same(got, np.asarray(w, np.float64), 1e-12, 1e-12, what=name)


# --- the front end's conversions ---------------------------------------------------------
@pytest.mark.parametrize("dtype,value", [(np.float64, 0.0), (np.int64, 0), (np.float64, 2),
                                         (np.int32, 7)])
def test_where_v2_python_value_takes_the_tensors_dtype(dtype, value):
    # TF converts a Python value among x and y to the other's dtype; a float32 (or int32)
    # constant beside a float64 (int64) tensor used to be a dtype error in Select.
    x = np.array([[-1, 2], [3, -4]], dtype)
    assert_same(run(lambda t: tf.where_v2(t > 0, t, value), x), np.where(x > 0, x, value).astype(dtype))
    assert_same(run(lambda t: tf.where_v2(t > 0, value, t), x), np.where(x > 0, value, x).astype(dtype))


def test_unstack_axis_out_of_range_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match=r"axis = 3 not in \[-3, 3\)"):
        run(lambda t: tf.unstack(t, axis=3), X3)
    assert_same(run(lambda t: tf.unstack(t, axis=-3)[1], X3), X3[1])


@pytest.mark.parametrize("ids,message", [
    ([-1, 0, 1, 1, 2], "segment id -1 .position 0. is negative"),
    ([1, 0, 2, 2, 3], "segment ids are not increasing: 0 at position 1 follows 1")])
def test_segment_sum_refuses_negative_or_unsorted_ids_as_tf(ids, message):
    # TF's SegmentSum kernel refuses them; Loom's dropped a negative id's row silently.
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        run(lambda t: tf.segment_sum(t, ids), P)


def test_segment_sum_of_no_rows_is_empty():
    got = run(lambda t: tf.segment_sum(t[:0], np.zeros([0], np.int32)), P)
    assert_same(got, np.zeros((0, 3), np.float32))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("direction", ["ASCENDING", "DESCENDING"])
def test_sort_and_argsort_of_integer_edges(dtype, direction):
    # An ascending sort is a top_k of flipped values; TF 1.15's flip, negation, maps INT_MIN
    # to itself, which then sorted last (silently). -1 - v flips every integer exactly.
    info = np.iinfo(dtype)
    x = np.array([5, info.min, 0, info.max, -1, 0, info.min + 1, info.max], dtype)
    sign = 1 if direction == "ASCENDING" else -1  # Python ints: no overflow; ties by index
    order = np.array(sorted(range(len(x)), key=lambda i: (sign * int(x[i]), i)))
    assert_same(run(lambda t: tf.sort(t, direction=direction), x), x[order], what="sort")
    assert_same(run(lambda t: tf.argsort(t, direction=direction), x), order.astype(np.int32),
                what="argsort")
