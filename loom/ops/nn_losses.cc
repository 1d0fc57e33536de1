// The softmax family and the cross-entropy losses, with fused, numerically stable kernels:
// every row subtracts its max before exponentiating, and the log-sum-exp is kept in log
// space, so no logit magnitude overflows.
#include <algorithm>
#include <cmath>

#include "loom/ops/attr_keys.h"
#include "loom/ops/grad_support.h"
#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_internal.h"
#include "loom/ops/reduce.h"
#include "loom/ops/vector_math.h"

namespace loom {
namespace {

using op_attrs::kAxis;
inline constexpr Attr<double> kScale{"scale"};

using nn_internal::kElementwiseChunk;

// A tensor viewed as [outer, n, inner] around `axis`: `rows` = outer * inner independent
// vectors of length n, with elements `stride` = inner apart.
struct AxisView {
  int64_t rows, n, stride;
  int64_t base(int64_t row) const { return (row / stride) * n * stride + row % stride; }
};

int NormalizedAxis(const KernelContext& c, int rank) {
  int64_t axis = c.attr(kAxis);
  if (axis < -rank || axis >= rank) c.Fail("axis ", axis, " is out of range for rank ", rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

AxisView ViewAround(const Shape& s, int axis) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s.dim(i);
  for (int i = axis + 1; i < s.rank(); ++i) inner *= s.dim(i);
  return {outer * inner, s.dim(axis), inner};
}

// Rows per ParallelFor chunk for row-wise work on rows of length n.
int64_t MinRows(int64_t n) {
  return std::max<int64_t>(1, kElementwiseChunk / std::max<int64_t>(n, 1));
}

// In place exp / log: float arrays through the vectorized loops of vector_math.h (they
// differ from libm's expf / logf by at most 2 ulp), float64 through libm.
void ExpInPlace(float* x, int64_t n) { internal::ExpFloats(x, x, n); }
void ExpInPlace(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}
void LogInPlace(float* x, int64_t n) { internal::LogFloats(x, x, n); }
void LogInPlace(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::log(x[i]);
}

// Contiguous rows are processed this many at a time, so exp and log run over whole blocks.
inline constexpr int64_t kBlockRows = 64;
// LogSoftmax's block of exps, in elements (on the stack).
inline constexpr int64_t kSoftmaxScratch = 1024;

// For `rows` <= kBlockRows contiguous rows of length n >= 1 at `a`: e = exp(a - max of the
// row), m[r] = the row's max, sum[r] = its sum of e (added in order: a row's result does not
// depend on the block it falls in). `e` may alias `a`.
template <typename T>
void ShiftedExpRows(const T* a, T* e, int64_t rows, int64_t n, T* m, T* sum) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* ar = a + r * n;
    T mr = ar[0];
    for (int64_t j = 1; j < n; ++j) mr = std::max(mr, ar[j]);
    for (int64_t j = 0; j < n; ++j) e[r * n + j] = ar[j] - mr;
    m[r] = mr;
  }
  ExpInPlace(e, rows * n);
  for (int64_t r = 0; r < rows; ++r) {
    T s = 0;
    for (int64_t j = 0; j < n; ++j) s += e[r * n + j];
    sum[r] = s;
  }
}

void SoftmaxShape(InferenceContext& c) {
  c.ExpectDType(0, {kFloat32, kFloat64});
  const Shape& s = c.input_shape(0);
  const int64_t axis = c.attr(kAxis);
  if (s.rank_known() && (s.rank() == 0 || axis < -s.rank() || axis >= s.rank())) {
    c.Fail("axis ", axis, " is out of range for input shape ", s);
  }
  c.set_output(0, c.input_dtype(0), s);
}

template <bool kLog>
void SoftmaxKernel(KernelContext& c) {
  const Tensor& x = c.input(0);
  if (x.rank() == 0) c.Fail("input must have rank >= 1");
  AxisView v = ViewAround(x.shape(), NormalizedAxis(c, x.rank()));
  Tensor y = c.ForwardInputOrAllocate(0, 0, x.shape());
  SwitchFloat(x.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const int64_t n = v.n, s = v.stride;
    c.pool().ParallelFor(v.rows, MinRows(n), [&](int64_t r0, int64_t r1) {
      // Rows contiguous: exp and log over blocks of rows. LogSoftmax keeps the exps in
      // `scratch` (y may be x's buffer, and x is read again), so it needs short rows.
      if (s == 1 && n > 0 && (!kLog || n <= kSoftmaxScratch)) {
        T m[kBlockRows], sum[kBlockRows], scratch[kLog ? kSoftmaxScratch : 1];
        const int64_t block = kLog ? std::min(kBlockRows, kSoftmaxScratch / n) : kBlockRows;
        for (int64_t rb = r0; rb < r1; rb += block) {
          const int64_t count = std::min(block, r1 - rb);
          const T* a = in + rb * n;
          T* b = out + rb * n;
          ShiftedExpRows(a, kLog ? scratch : b, count, n, m, sum);
          if constexpr (kLog) {
            LogInPlace(sum, count);
            // (x - m) - lse, not x - (m + lse): m + lse would round at large |m|.
            for (int64_t r = 0; r < count; ++r) {
              for (int64_t j = 0; j < n; ++j) b[r * n + j] = (a[r * n + j] - m[r]) - sum[r];
            }
          } else {
            for (int64_t r = 0; r < count; ++r) {
              const T inv = 1 / sum[r];
              for (int64_t j = 0; j < n; ++j) b[r * n + j] *= inv;
            }
          }
        }
        return;
      }
      for (int64_t r = r0; r < r1; ++r) {
        const T* a = in + v.base(r);
        T* b = out + v.base(r);
        T m = a[0];
        for (int64_t j = 1; j < n; ++j) m = std::max(m, a[j * s]);
        T sum = 0;
        if constexpr (kLog) {
          for (int64_t j = 0; j < n; ++j) sum += std::exp(a[j * s] - m);
          // (x - m) - lse, not x - (m + lse): m + lse would round at large |m|.
          const T lse = std::log(sum);
          for (int64_t j = 0; j < n; ++j) b[j * s] = (a[j * s] - m) - lse;
        } else {
          for (int64_t j = 0; j < n; ++j) sum += (b[j * s] = std::exp(a[j * s] - m));
          const T inv = 1 / sum;
          for (int64_t j = 0; j < n; ++j) b[j * s] *= inv;
        }
      }
    });
    return 0;
  });
}

// SoftmaxGrad(y, dy): dx = y * (dy - sum(dy * y)).
// LogSoftmaxGrad(y, dy): dx = dy - exp(y) * sum(dy).
template <bool kLog>
void SoftmaxGradKernel(KernelContext& c) {
  nn_internal::ExpectSameRuntimeShape(c, 0, 1);
  const Tensor& y = c.input(0);
  const Tensor& dy = c.input(1);
  AxisView v = ViewAround(y.shape(), NormalizedAxis(c, y.rank()));
  Tensor dx = c.ForwardInputOrAllocate(1, 0, y.shape());
  SwitchFloat(y.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const T* py = y.data<T>();
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();
    const int64_t n = v.n, s = v.stride;
    c.pool().ParallelFor(v.rows, MinRows(n), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t base = v.base(r);
        const T* a = py + base;
        const T* d = pdy + base;
        T* o = pdx + base;
        T sum = 0;
        if constexpr (kLog) {
          for (int64_t j = 0; j < n; ++j) sum += d[j * s];
          for (int64_t j = 0; j < n; ++j) o[j * s] = d[j * s] - std::exp(a[j * s]) * sum;
        } else {
          for (int64_t j = 0; j < n; ++j) sum += d[j * s] * a[j * s];
          for (int64_t j = 0; j < n; ++j) o[j * s] = a[j * s] * (d[j * s] - sum);
        }
      }
    });
    return 0;
  });
}

// a + b where either may be missing (an output no gradient reached).
GradOutput SumOfTerms(const Scope& s, const Output& a, const Output& b) {
  if (!a.valid()) return b.valid() ? GradOutput(b) : GradOutput();
  return b.valid() ? GradOutput(Add(s, a, b)) : GradOutput(a);
}

// Sum over the softmax axis, kept as a size-1 dim (so it broadcasts back).
Output RowSum(const Scope& s, Output x, int64_t axis) {
  return Sum(s, x, {axis}, {.keep_dims = true});
}

const OpDef& SoftmaxGradOp();

// Second derivatives of the softmax family, with G the gradient reaching dx (the forward
// output y is an input of its own, whose gradient flows on through Softmax's rule):
//   SoftmaxGrad: dx = y (dy - S), S = sum(dy y):
//     d/d dy = y (G - sum(G y)) = SoftmaxGrad(y, G),  d/dy = G (dy - S) - sum(G y) dy.
//   LogSoftmaxGrad: dx = dy - exp(y) sum(dy):
//     d/d dy = G - sum(G exp(y)),  d/dy = -G exp(y) sum(dy).
std::vector<GradOutput> SoftmaxGradGrad(const GradContext& g) {
  const Scope& s = g.scope();
  const int64_t axis = g.attr(kAxis);
  Output y = g.input(0), dy = g.input(1), up = g.grad(0);
  Output gy = RowSum(s, Mul(s, up, y), axis);
  Output d_y = Sub(s, Mul(s, up, Sub(s, dy, RowSum(s, Mul(s, dy, y), axis))), Mul(s, gy, dy));
  return {d_y, nn_internal::AddOp(s, SoftmaxGradOp(), {y, up}, g.node().attrs())};
}

std::vector<GradOutput> LogSoftmaxGradGrad(const GradContext& g) {
  const Scope& s = g.scope();
  const int64_t axis = g.attr(kAxis);
  Output y = g.input(0), dy = g.input(1), up = g.grad(0);
  Output p = Exp(s, y);
  Output d_y = Neg(s, Mul(s, Mul(s, up, p), RowSum(s, dy, axis)));
  return {d_y, Sub(s, up, RowSum(s, Mul(s, up, p), axis))};
}

const OpDef& SoftmaxGradOp() {
  static const OpDef op = {
      .name = "SoftmaxGrad",
      .num_inputs = 2,
      .attrs = {kAxis.Default(-1)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = nn_internal::FloatBinarySameShape,
      .kernel = SoftmaxGradKernel<false>,
      .grad = SoftmaxGradGrad,
  };
  return op;
}

const OpDef& LogSoftmaxGradOp() {
  static const OpDef op = {
      .name = "LogSoftmaxGrad",
      .num_inputs = 2,
      .attrs = {kAxis.Default(-1)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = nn_internal::FloatBinarySameShape,
      .kernel = SoftmaxGradKernel<true>,
      .grad = LogSoftmaxGradGrad,
  };
  return op;
}

using nn_internal::AddOp;

const OpDef& SoftmaxOp() {
  static const OpDef op = {
      .name = "Softmax",
      .num_inputs = 1,
      .attrs = {kAxis.Default(-1)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = SoftmaxShape,
      .kernel = SoftmaxKernel<false>,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {AddOp(g.scope(), SoftmaxGradOp(), {g.output(0), g.grad(0)}, g.node().attrs())};
      },
  };
  return op;
}

const OpDef& LogSoftmaxOp() {
  static const OpDef op = {
      .name = "LogSoftmax",
      .num_inputs = 1,
      .attrs = {kAxis.Default(-1)},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = SoftmaxShape,
      .kernel = SoftmaxKernel<true>,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {AddOp(g.scope(), LogSoftmaxGradOp(), {g.output(0), g.grad(0)}, g.node().attrs())};
      },
  };
  return op;
}

// ---- Cross entropy ----

Output ScaleRows(const Scope& scope, Output x, Output g, double scale);

// ScaleRows(x [..., C], g [...]): x * g[..., None] * scale. Backprops the per-example
// loss gradient through the fused xent ops. Its gradient (for second derivatives):
// d/dx = ScaleRows(G, g, scale), d/dg = scale * sum(G x) over the last dim.
const OpDef& ScaleRowsOp() {
  static const OpDef op = {
      .name = "ScaleRows",
      .num_inputs = 2,
      .attrs = {kScale.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectSameDType(0, 1);
            c.set_output(0, c.input_dtype(0), c.input_shape(0));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            const Tensor& g = c.input(1);
            const int64_t n = x.rank() == 0 ? 1 : x.dim(-1);
            if (x.rank() == 0 || g.NumElements() * n != x.NumElements()) {
              c.Fail("cannot scale rows of ", x.shape(), " by ", g.shape());
            }
            const double scale = c.attr(kScale);
            Tensor out = c.ForwardInputOrAllocate(0, 0, x.shape());
            SwitchFloat(x.dtype(), "ScaleRows", [&](auto tag) {
              using T = decltype(tag);
              const T* px = x.data<T>();
              const T* pg = g.data<T>();
              T* po = out.data<T>();
              c.pool().ParallelFor(g.NumElements(), MinRows(n), [&](int64_t r0, int64_t r1) {
                for (int64_t r = r0; r < r1; ++r) {
                  const T k = pg[r] * static_cast<T>(scale);
                  for (int64_t j = 0; j < n; ++j) po[r * n + j] = px[r * n + j] * k;
                }
              });
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        const Scope& s = g.scope();
        const double scale = g.attr(kScale);
        Output dg = Sum(s, Mul(s, g.grad(0), g.input(0)), {-1});
        if (scale != 1.0) dg = Mul(s, dg, scale);
        return {ScaleRows(s, g.grad(0), g.input(1), scale), dg};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), SampleDoubles({2})}, {kScale(2.0)}};
          },
  };
  return op;
}

Output ScaleRows(const Scope& scope, Output x, Output g, double scale) {
  return AddOp(scope, ScaleRowsOp(), {x, g}, {kScale(scale)});
}

// Both xent ops: output 0 the per-example loss (logits' shape without the class dim),
// output 1 the backprop d loss / d logits.
void XentShape(InferenceContext& c, bool sparse) {
  c.ExpectDType(1, {kFloat32, kFloat64});
  const Shape& labels = c.input_shape(0);
  const Shape& logits = c.input_shape(1);
  if (logits.rank_known() && logits.rank() < 1) c.Fail("logits must have rank >= 1, got ", logits);
  Shape loss = logits.rank_known()
                   ? Shape(std::vector<int64_t>(logits.dims().begin(), logits.dims().end() - 1))
                   : Shape::Unknown();
  if (sparse) {
    c.ExpectDType(0, {kInt32, kInt64});
    if (!labels.IsCompatibleWith(loss)) {
      c.Fail("labels of shape ", labels, " do not match logits of shape ", logits,
             "; labels must have the logits' shape without the last (class) dimension");
    }
  } else {
    c.ExpectSameDType(0, 1);
    if (!labels.IsCompatibleWith(logits)) {
      c.Fail("labels of shape ", labels, " and logits of shape ", logits,
             " must have the same shape");
    }
  }
  c.set_output(0, c.input_dtype(1), loss);
  c.set_output(1, c.input_dtype(1), logits);
}

// Per row: m = max(x), lse = log(sum(exp(x - m))), log p_j = x_j - m - lse.
template <bool kSparse>
void XentKernel(KernelContext& c) {
  const Tensor& labels = c.input(0);
  const Tensor& logits = c.input(1);
  if (logits.rank() < 1) c.Fail("logits must have rank >= 1, got ", logits.shape());
  const int64_t classes = logits.dim(-1);
  const int64_t rows = classes == 0 ? 0 : logits.NumElements() / classes;
  const DimsView dims = logits.shape().dims();
  const Shape loss_shape(DimsView(dims.data(), dims.size() - 1));
  if (labels.shape() != (kSparse ? loss_shape : logits.shape())) {
    c.Fail("labels of shape ", labels.shape(), " do not match logits of shape ", logits.shape());
  }
  Tensor loss = c.AllocateOutput(0, loss_shape);
  Tensor backprop = c.AllocateOutput(1, logits.shape());
  SwitchFloat(logits.dtype(), c.node().op(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = logits.data<T>();
    T* pl = loss.data<T>();
    T* pb = backprop.data<T>();
    c.pool().ParallelFor(rows, MinRows(classes), [&](int64_t r0, int64_t r1) {
      T m[kBlockRows], sum[kBlockRows], lse[kBlockRows];
      for (int64_t rb = r0; rb < r1; rb += kBlockRows) {
        const int64_t count = std::min(kBlockRows, r1 - rb);
        ShiftedExpRows(x + rb * classes, pb + rb * classes, count, classes, m, sum);
        std::copy_n(sum, count, lse);
        LogInPlace(lse, count);
        for (int64_t i = 0; i < count; ++i) {
          const int64_t r = rb + i;
          const T* a = x + r * classes;
          T* b = pb + r * classes;
          const T inv = 1 / sum[i];
          if constexpr (kSparse) {
            const int64_t label =
                labels.dtype() == kInt32 ? labels.data<int32_t>()[r] : labels.data<int64_t>()[r];
            if (label < 0 || label >= classes) {
              c.Fail("label ", label, " at position ", r, " is outside the valid range [0, ",
                     classes, ") of the ", classes, " classes");
            }
            for (int64_t j = 0; j < classes; ++j) b[j] *= inv;
            b[label] -= 1;
            pl[r] = lse[i] - (a[label] - m[i]);
          } else {
            // d/dx_j -sum_k z_k log p_k = p_j sum(z) - z_j (= p - z for distributions z).
            const T* z = labels.data<T>() + r * classes;
            T total = 0, zsum = 0;
            for (int64_t j = 0; j < classes; ++j) {
              total += z[j] * (lse[i] - (a[j] - m[i]));
              zsum += z[j];
            }
            for (int64_t j = 0; j < classes; ++j) b[j] = b[j] * inv * zsum - z[j];
            pl[r] = total;
          }
        }
      }
    });
    return 0;
  });
}

// The xent ops' gradient through the backprop output b (output 1; a second derivative),
// G = the gradient reaching b, p = softmax(logits), S = sum(labels) per row, so that
// b = p S - labels (the sparse op: S = 1):
//   d/d logits <G, b> = S p (G - sum(G p)),  d/d labels <G, b> = sum(G p) - G.
// TF 1.15's _SoftmaxCrossEntropyWithLogitsGrad adds (G - sum(G p)) p to the logits'
// gradient, the same for labels that sum to 1 (its backprop is p - labels), and gives
// labels no term: here both follow Loom's backprop exactly, for any labels.
struct BackpropTerms {
  Output logits, labels;
};
BackpropTerms XentBackpropGrad(const GradContext& g, bool sparse) {
  if (!g.grad(1).valid()) return {};
  const Scope& s = g.scope();
  Output up = g.grad(1);
  Output p = AddOp(s, SoftmaxOp(), {g.input(1)}, {kAxis(-1)});
  Output centered = Sub(s, up, RowSum(s, Mul(s, up, p), -1));  // G - sum(G p)
  Output logits_term = Mul(s, centered, p);
  if (sparse) return {logits_term, Output()};
  return {Mul(s, logits_term, RowSum(s, g.input(0), -1)), Neg(s, centered)};
}

const OpDef& SoftmaxXentOp() {
  static const OpDef op = {
      .name = "SoftmaxCrossEntropyWithLogits",
      .num_inputs = 2,
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(1), DTypeRule::SameAsInput(1)},
      .shape = [](InferenceContext& c) { XentShape(c, /*sparse=*/false); },
      .kernel = XentKernel<false>,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // Through the loss (G0 = grad(0)): d/d labels = -log_softmax(logits) G0,
        // d/d logits = backprop G0; plus the backprop output's terms.
        const Scope& s = g.scope();
        const BackpropTerms terms = XentBackpropGrad(g, /*sparse=*/false);
        Output labels, logits;
        if (g.grad(0).valid()) {
          Output log_p = AddOp(s, LogSoftmaxOp(), {g.input(1)}, {kAxis(-1)});
          labels = ScaleRows(s, log_p, g.grad(0), -1.0);
          logits = ScaleRows(s, g.output(1), g.grad(0), 1.0);
        }
        return {SumOfTerms(s, labels, terms.labels), SumOfTerms(s, logits, terms.logits)};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}, 2), SampleDoubles({2, 3})}, {}};
          },
  };
  return op;
}

const OpDef& SparseSoftmaxXentOp() {
  static const OpDef op = {
      .name = "SparseSoftmaxCrossEntropyWithLogits",
      .num_inputs = 2,
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(1), DTypeRule::SameAsInput(1)},
      .shape = [](InferenceContext& c) { XentShape(c, /*sparse=*/true); },
      .kernel = XentKernel<true>,
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // Integer labels get no gradient.
        const Scope& s = g.scope();
        Output logits;
        if (g.grad(0).valid()) logits = ScaleRows(s, g.output(1), g.grad(0), 1.0);
        return {GradOutput(), SumOfTerms(s, logits, XentBackpropGrad(g, /*sparse=*/true).logits)};
      },
      .sample =
          [] {
            return OpSample{
                {Tensor::FromVector<int64_t>({0, 2}), SampleDoubles({2, 3})}, {}, false};
          },
  };
  return op;
}

// ---- Sigmoid cross entropy ----

// SigmoidCrossEntropyWithLogitsGrad(labels z, logits x, g):
//   d/dz = -x * g,  d/dx = (sigmoid(x) - z) * g.
// Its gradient, with Gz, Gx reaching the two outputs and s = sigmoid(x):
//   d/dz = -g Gx,  d/dx = g (s (1 - s) Gx - Gz),  d/dg = (s - z) Gx - x Gz.
std::vector<GradOutput> SigmoidXentGradGrad(const GradContext& g) {
  const Scope& s = g.scope();
  Output z = g.input(0), x = g.input(1), grad = g.input(2);
  Output gz = g.grad(0), gx = g.grad(1);
  Output dz, dx, dg;
  if (gx.valid()) {
    Output sig = Sigmoid(s, x);
    dz = Neg(s, Mul(s, grad, gx));
    dx = Mul(s, grad, Mul(s, Mul(s, sig, Sub(s, 1.0, sig)), gx));
    dg = Mul(s, Sub(s, sig, z), gx);
  }
  if (gz.valid()) {
    dx = SumOfTerms(s, dx, Neg(s, Mul(s, grad, gz))).dense;
    dg = SumOfTerms(s, dg, Neg(s, Mul(s, x, gz))).dense;
  }
  return {dz, dx, dg};
}

const OpDef& SigmoidXentGradOp() {
  static const OpDef op = {
      .name = "SigmoidCrossEntropyWithLogitsGrad",
      .num_inputs = 3,
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0), DTypeRule::SameAsInput(1)},
      .shape =
          [](InferenceContext& c) {
            nn_internal::FloatBinarySameShape(c);
            c.set_output(1, c.input_dtype(1), c.input_shape(1));
          },
      .kernel =
          [](KernelContext& c) {
            nn_internal::ExpectSameRuntimeShape(c, 0, 1);
            nn_internal::ExpectSameRuntimeShape(c, 0, 2);
            const Tensor& z = c.input(0);
            const Tensor& x = c.input(1);
            const Tensor& g = c.input(2);
            Tensor dz = c.AllocateOutput(0, z.shape());
            Tensor dx = c.AllocateOutput(1, x.shape());
            SwitchFloat(x.dtype(), "SigmoidCrossEntropyWithLogitsGrad", [&](auto tag) {
              using T = decltype(tag);
              const T *pz = z.data<T>(), *px = x.data<T>(), *pg = g.data<T>();
              T *pdz = dz.data<T>(), *pdx = dx.data<T>();
              c.pool().ParallelFor(x.NumElements(), kElementwiseChunk, [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) {
                  pdz[i] = -px[i] * pg[i];
                  pdx[i] = (1 / (1 + std::exp(-px[i])) - pz[i]) * pg[i];
                }
              });
              return 0;
            });
          },
      .grad = SigmoidXentGradGrad,
  };
  return op;
}

const OpDef& SigmoidXentOp() {
  static const OpDef op = {
      .name = "SigmoidCrossEntropyWithLogits",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(1)},
      .shape = nn_internal::FloatBinarySameShape,
      .kernel =
          [](KernelContext& c) {
            // TF's stable form: max(x, 0) - x z + log(1 + exp(-|x|)).
            nn_internal::BinaryKernel(c, 1, [](auto z, auto x) {
              using T = decltype(x);
              return std::max(x, T(0)) - x * z + std::log1p(std::exp(-std::abs(x)));
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        Node* n = g.scope().AddNode(SigmoidXentGradOp(), {g.input(0), g.input(1), g.grad(0)}, {},
                                    "SigmoidCrossEntropyWithLogitsGrad");
        return {n->output(0), n->output(1)};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}, 2), SampleDoubles({2, 3})}, {}};
          },
  };
  return op;
}

Output Xent(const Scope& scope, const OpDef& op, const Input& labels, const Input& logits,
            bool sparse) {
  Output x = AsOutput(scope, logits);
  Output z = AsOutput(scope, labels, sparse ? DType::kInvalid : x.dtype());
  return scope.AddNode(op, {z, x}, {}, op.name)->output(0);
}

}  // namespace

Output Softmax(const Scope& scope, Input logits, int axis) {
  return AddOp(scope, SoftmaxOp(), {AsOutput(scope, logits)}, {kAxis(axis)});
}

Output LogSoftmax(const Scope& scope, Input logits, int axis) {
  return AddOp(scope, LogSoftmaxOp(), {AsOutput(scope, logits)}, {kAxis(axis)});
}

Output SoftmaxCrossEntropyWithLogits(const Scope& scope, Input labels, Input logits) {
  return Xent(scope, SoftmaxXentOp(), labels, logits, /*sparse=*/false);
}

Output SparseSoftmaxCrossEntropyWithLogits(const Scope& scope, Input labels, Input logits) {
  return Xent(scope, SparseSoftmaxXentOp(), labels, logits, /*sparse=*/true);
}

Output SigmoidCrossEntropyWithLogits(const Scope& scope, Input labels, Input logits) {
  return Xent(scope, SigmoidXentOp(), labels, logits, /*sparse=*/false);
}

void nn_internal::RegisterNnLossOps(OpRegistry& registry) {
  for (const OpDef* op :
       {&SoftmaxOp(), &SoftmaxGradOp(), &LogSoftmaxOp(), &LogSoftmaxGradOp(), &ScaleRowsOp(),
        &SoftmaxXentOp(), &SparseSoftmaxXentOp(), &SigmoidXentOp(), &SigmoidXentGradOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
