#include "loom/ops/matmul.h"

#include <algorithm>

#include "loom/ops/bf16.h"
#include "loom/ops/bf16_weights.h"
#include "loom/ops/blas.h"
#include "loom/ops/elementwise.h"
#include "loom/ops/math.h"
#include "loom/ops/onednn_matmul.h"

namespace loom {
namespace {

inline constexpr Attr<bool> kTransposeA{"transpose_a"};
inline constexpr Attr<bool> kTransposeB{"transpose_b"};

struct MatrixDims {
  int64_t m, k_a, k_b, n;
};

// The product's dims from the last two dims of a and b (kUnknownDim where unknown).
MatrixDims ProductDims(const Shape& a, const Shape& b, bool ta, bool tb) {
  const int64_t a0 = a.dim(-2), a1 = a.dim(-1), b0 = b.dim(-2), b1 = b.dim(-1);
  return {ta ? a1 : a0, ta ? a0 : a1, tb ? b1 : b0, tb ? b0 : b1};
}

template <typename Fail>
void CheckInner(const Fail& fail, const Shape& a, const Shape& b, bool ta, bool tb,
                const MatrixDims& d) {
  if (d.k_a != kUnknownDim && d.k_b != kUnknownDim && d.k_a != d.k_b) {
    fail("shapes ", a, (ta ? "^T" : ""), " x ", b, (tb ? "^T" : ""), ": inner dimensions ", d.k_a,
         " and ", d.k_b, " differ");
  }
}

// out[m,n] = op(a) op(b) for one matrix pair, through the BLAS.
template <typename T>
void GemmOne(bool ta, bool tb, const MatrixDims& d, const T* a, int64_t lda, const T* b,
             int64_t ldb, T* out) {
  if (d.m == 0 || d.n == 0) return;
  if (d.k_a == 0) {
    std::fill(out, out + d.m * d.n, T(0));
    return;
  }
  Gemm(ta, tb, d.m, d.n, d.k_a, T(1), a, lda, b, ldb, T(0), out, d.n);
}

// The operands as a float32 product under `path` reads them: rounded to bf16 unless the
// path is float32 (the hardware path rounds its own, and comes here only when declined).
std::pair<Tensor, Tensor> ProductOperands(const KernelContext& c, bf16::Path path) {
  if (path == bf16::Path::kFloat32) return {c.input(0), c.input(1)};
  return {bf16::Rounded(c.input(0), c.pool()), bf16::Rounded(c.input(1), c.pool())};
}

// A cached operand's bf16 bits (bf16_weights.h), or nullptr when it has none.
const uint16_t* Bits(const Tensor& bits) {
  return bits.defined() ? static_cast<const uint16_t*>(bits.raw_data()) : nullptr;
}

bool TransposeA(const InferenceContext& c) { return c.attr(kTransposeA); }
bool TransposeB(const InferenceContext& c) { return c.attr(kTransposeB); }

// TF's MatMulGrad for each transpose combination, with `mm` MatMul or BatchMatMul:
//   z = a b      : da = g b^T,     db = a^T g
//   z = a b^T    : da = g b,       db = g^T a
//   z = a^T b    : da = b g^T,     db = a g
//   z = a^T b^T  : da = b^T g^T,   db = g^T a^T
template <typename MM>
std::pair<Output, Output> ProductGrads(const GradContext& g, MM mm) {
  const Scope& s = g.scope();
  const bool ta = g.attr(kTransposeA), tb = g.attr(kTransposeB);
  const Precision p = bf16::NodePrecision(g.node());
  Output a = g.input(0), b = g.input(1), dz = g.grad();
  if (!ta && !tb)
    return {mm(s, dz, b, MatMulOptions{false, true, p}),
            mm(s, a, dz, MatMulOptions{true, false, p})};
  if (!ta && tb)
    return {mm(s, dz, b, MatMulOptions{false, false, p}),
            mm(s, dz, a, MatMulOptions{true, false, p})};
  if (ta && !tb)
    return {mm(s, b, dz, MatMulOptions{false, true, p}),
            mm(s, a, dz, MatMulOptions{false, false, p})};
  return {mm(s, b, dz, MatMulOptions{true, true, p}), mm(s, dz, a, MatMulOptions{true, true, p})};
}

const OpDef& MatMulOp() {
  static const OpDef op = {
      .name = "MatMul",
      .num_inputs = 2,
      .attrs = {kTransposeA.Default(false), kTransposeB.Default(false), bf16::PrecisionAttrDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectSameDType(0, 1);
            c.ExpectRank(0, 2);
            c.ExpectRank(1, 2);
            const Shape &a = c.input_shape(0), &b = c.input_shape(1);
            if (!a.rank_known() || !b.rank_known()) {
              // Whatever is known of m and n still shows.
              int64_t m = a.rank_known() ? a.dim(TransposeA(c) ? 1 : 0) : kUnknownDim;
              int64_t n = b.rank_known() ? b.dim(TransposeB(c) ? 0 : 1) : kUnknownDim;
              return c.set_output(0, c.input_dtype(0), Shape{m, n});
            }
            MatrixDims d = ProductDims(a, b, TransposeA(c), TransposeB(c));
            CheckInner([&](const auto&... args) { c.Fail(args...); }, a, b, TransposeA(c),
                       TransposeB(c), d);
            c.set_output(0, c.input_dtype(0), Shape{d.m, d.n});
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor &a = c.input(0), &b = c.input(1);
            const bool ta = c.attr(kTransposeA), tb = c.attr(kTransposeB);
            if (a.rank() != 2 || b.rank() != 2) {
              c.Fail("needs matrices, got shapes ", a.shape(), " and ", b.shape());
            }
            MatrixDims d = ProductDims(a.shape(), b.shape(), ta, tb);
            CheckInner([&](const auto&... args) { c.Fail(args...); }, a.shape(), b.shape(), ta, tb,
                       d);
            Tensor out = c.AllocateOutput(0, Shape{d.m, d.n});
            const bf16::Path path = bf16::ProductPath(c, a.dtype(), tb, d.m, d.n, d.k_a);
            if (path == bf16::Path::kHardware && d.m > 0 && d.n > 0 && d.k_a > 0) {
              // A weight's bf16 bits are made once per version of its variable, and those
              // of a value two products read once per step.
              const bf16::OperandCopy a_copy = bf16::OperandBits(c, 0);
              const bf16::OperandCopy b_copy = bf16::OperandBits(c, 1);
              if (bf16::OnednnMatMulBf16(ta, tb, d.m, d.n, d.k_a, a.data<float>(), a.dim(1),
                                         b.data<float>(), b.dim(1), out.data<float>(), c.pool(),
                                         Bits(a_copy.bits), Bits(b_copy.bits),
                                         b_copy.layouts.get())) {
                return;
              }
            }
            const auto operands = ProductOperands(c, path);
            const Tensor &x = operands.first, &y = operands.second;
            SwitchFloat(a.dtype(), "MatMul", [&](auto tag) {
              using T = decltype(tag);
              GemmOne(ta, tb, d, x.data<T>(), a.dim(1), y.data<T>(), b.dim(1), out.data<T>());
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        auto [da, db] = ProductGrads(g, [](const Scope& s, Output x, Output y, MatMulOptions o) {
          return MatMul(s, x, y, o);
        });
        return {da, db};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), SampleDoubles({3, 4})}, {}};
          },
  };
  return op;
}

Shape BatchDims(const Shape& s) {
  return Shape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 2));
}

const OpDef& BatchMatMulOp() {
  static const OpDef op = {
      .name = "BatchMatMul",
      .num_inputs = 2,
      .attrs = {kTransposeA.Default(false), kTransposeB.Default(false), bf16::PrecisionAttrDef()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectSameDType(0, 1);
            const Shape &a = c.input_shape(0), &b = c.input_shape(1);
            if (!a.rank_known() || !b.rank_known()) {
              return c.set_output(0, c.input_dtype(0), Shape::Unknown());
            }
            if (a.rank() < 2 || b.rank() < 2 || std::max(a.rank(), b.rank()) < 3) {
              c.Fail("needs inputs of rank >= 2 with one of rank >= 3, got shapes ", a, " and ", b,
                     "; use MatMul for plain matrices");
            }
            MatrixDims d = ProductDims(a, b, TransposeA(c), TransposeB(c));
            CheckInner([&](const auto&... args) { c.Fail(args...); }, a, b, TransposeA(c),
                       TransposeB(c), d);
            std::vector<int64_t> dims = BroadcastShapes(c, BatchDims(a), BatchDims(b)).dims();
            dims.push_back(d.m);
            dims.push_back(d.n);
            c.set_output(0, c.input_dtype(0), Shape(std::move(dims)));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor &a = c.input(0), &b = c.input(1);
            const bool ta = c.attr(kTransposeA), tb = c.attr(kTransposeB);
            if (a.rank() < 2 || b.rank() < 2) {
              c.Fail("needs inputs of rank >= 2, got shapes ", a.shape(), " and ", b.shape());
            }
            MatrixDims d = ProductDims(a.shape(), b.shape(), ta, tb);
            CheckInner([&](const auto&... args) { c.Fail(args...); }, a.shape(), b.shape(), ta, tb,
                       d);
            const Shape a_batch = BatchDims(a.shape()), b_batch = BatchDims(b.shape());
            const Shape batch = internal::RuntimeBroadcastShape(c, a_batch, b_batch);
            std::vector<int64_t> dims = batch.dims();
            dims.push_back(d.m);
            dims.push_back(d.n);
            Tensor out = c.AllocateOutput(0, Shape(std::move(dims)));
            const auto plan = internal::MakeBroadcastPlan<2>({&a_batch, &b_batch}, batch);
            const int64_t a_size = a.dim(-2) * a.dim(-1), b_size = b.dim(-2) * b.dim(-1);
            const int64_t out_size = d.m * d.n;
            const int rank = static_cast<int>(plan.dims.size());
            // The offsets (in matrices) of pair i's operands.
            auto offsets = [&](int64_t i) {
              int64_t rest = i, a_off = 0, b_off = 0;
              for (int k = rank - 1; k >= 0; --k) {
                const int64_t idx = rest % plan.dims[k];
                rest /= plan.dims[k];
                a_off += idx * plan.strides[0][k];
                b_off += idx * plan.strides[1][k];
              }
              return std::pair<int64_t, int64_t>{a_off * a_size, b_off * b_size};
            };
            const bf16::Path path = bf16::KernelPath(c, a.dtype());
            if (path == bf16::Path::kHardware && out_size > 0 && d.k_a > 0) {
              // Every pair has one shape: oneDNN takes all of them or declines the first.
              int64_t done = 0;
              for (; done < plan.num_elements; ++done) {
                const auto [a_off, b_off] = offsets(done);
                if (!bf16::OnednnMatMulBf16(ta, tb, d.m, d.n, d.k_a, a.data<float>() + a_off,
                                            a.dim(-1), b.data<float>() + b_off, b.dim(-1),
                                            out.data<float>() + done * out_size, c.pool())) {
                  break;
                }
              }
              if (done == plan.num_elements) return;
            }
            const auto operands = ProductOperands(c, path);
            const Tensor &x = operands.first, &y = operands.second;
            SwitchFloat(a.dtype(), "BatchMatMul", [&](auto tag) {
              using T = decltype(tag);
              for (int64_t i = 0; i < plan.num_elements; ++i) {
                const auto [a_off, b_off] = offsets(i);
                GemmOne(ta, tb, d, x.data<T>() + a_off, a.dim(-1), y.data<T>() + b_off, b.dim(-1),
                        out.data<T>() + i * out_size);
              }
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // MatMulGrad per batch element; broadcast batch dims are summed back.
        auto [da, db] = ProductGrads(g, [](const Scope& s, Output x, Output y, MatMulOptions o) {
          return BatchMatMul(s, x, y, o);
        });
        const Scope& s = g.scope();
        return {SumToShapeOf(s, da, g.input(0)), SumToShapeOf(s, db, g.input(1))};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 2, 3}), SampleDoubles({2, 3, 2})},
                            {kTransposeA(false)}};
          },
  };
  return op;
}

Output BuildProduct(const OpDef& op, const Scope& scope, const Input& a, const Input& b,
                    MatMulOptions options) {
  auto [x, y] = AsOutputs(scope, a, b);
  AttrMap attrs = {kTransposeA(options.transpose_a), kTransposeB(options.transpose_b)};
  bf16::AddPrecisionAttr(options.precision, attrs);
  return scope.AddNode(op, {x, y}, std::move(attrs), op.name)->output(0);
}

}  // namespace

Output MatMul(const Scope& scope, Input a, Input b, MatMulOptions options) {
  return BuildProduct(MatMulOp(), scope, a, b, options);
}

Output BatchMatMul(const Scope& scope, Input a, Input b, MatMulOptions options) {
  return BuildProduct(BatchMatMulOp(), scope, a, b, options);
}

void RegisterMatMulOps(OpRegistry& registry) {
  registry.Register(MatMulOp());
  registry.Register(BatchMatMulOp());
}

}  // namespace loom
