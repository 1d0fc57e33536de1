// Norm-based ops: L2Loss, GlobalNorm and clipping by global norm, each a small fused
// kernel with its own gradient op. Sums of squares accumulate in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "loom/ops/math.h"
#include "loom/ops/nn.h"
#include "loom/ops/nn_internal.h"

namespace loom {
namespace {

using nn_internal::kElementwiseChunk;

template <typename T>
double SumOfSquares(ThreadPool& pool, const T* p, int64_t n) {
  const int64_t blocks = std::clamp<int64_t>(n / kElementwiseChunk, 1, 4 * pool.num_threads());
  std::vector<double> partial(blocks, 0.0);
  pool.ParallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      double acc = 0;
      for (int64_t i = n * b / blocks; i < n * (b + 1) / blocks; ++i) {
        acc += static_cast<double>(p[i]) * p[i];
      }
      partial[b] = acc;
    }
  });
  double total = 0;
  for (double v : partial) total += v;
  return total;
}

// out = x * k element-wise, in place when input `in` is free.
template <typename T>
void ScaleInto(KernelContext& c, int in, int out_index, const Tensor& x, T k) {
  Tensor out = in >= 0 ? c.ForwardInputOrAllocate(in, out_index, x.shape())
                       : c.AllocateOutput(out_index, x.shape());
  const T* px = x.data<T>();
  T* po = out.data<T>();
  c.pool().ParallelFor(x.NumElements(), kElementwiseChunk, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) po[i] = px[i] * k;
  });
}

void ScalarOutput(InferenceContext& c) {
  c.ExpectDType(0, {kFloat32, kFloat64});
  c.set_output(0, c.input_dtype(0), Shape{});
}

template <typename T>
T ScalarInput(const KernelContext& c, int i) {
  if (c.input(i).NumElements() != 1) {
    c.Fail("input ", i, " must be a scalar, got shape ", c.input(i).shape());
  }
  return c.input(i).data<T>()[0];
}

void ExpectScalar(const InferenceContext& c, int i) {
  const Shape& s = c.input_shape(i);
  if (s.rank_known() && s.fully_defined() && s.num_elements() != 1) {
    c.Fail("input ", i, " (", c.input(i).name(), ") must be a scalar, got shape ", s);
  }
}

// ---- L2Loss ----

const OpDef& L2LossGradOp() {
  // d/dt sum(t^2)/2 = t
  static const OpDef op = {
      .name = "L2LossGrad",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64});
            c.ExpectSameDType(0, 1);
            ExpectScalar(c, 1);
            c.set_output(0, c.input_dtype(0), c.input_shape(0));
          },
      .kernel =
          [](KernelContext& c) {
            SwitchFloat(c.input(0).dtype(), "L2LossGrad", [&](auto tag) {
              using T = decltype(tag);
              ScaleInto<T>(c, 0, 0, c.input(0), ScalarInput<T>(c, 1));
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // L2LossGrad(t, k) = t k (k a scalar): d/dt = G k, d/dk = sum(G t).
        const Scope& s = g.scope();
        Output t = g.input(0), k = g.input(1);
        return {Mul(s, g.grad(0), k), SumToShapeOf(s, Mul(s, g.grad(0), t), k)};
      },
      .not_swept = "built only by L2Loss's gradient rule; L2Loss's gradient check covers it",
  };
  return op;
}

const OpDef& L2LossOp() {
  static const OpDef op = {
      .name = "L2Loss",
      .num_inputs = 1,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = ScalarOutput,
      .kernel =
          [](KernelContext& c) {
            Tensor out = c.AllocateOutput(0, Shape{});
            SwitchFloat(c.input(0).dtype(), "L2Loss", [&](auto tag) {
              using T = decltype(tag);
              const Tensor& t = c.input(0);
              out.data<T>()[0] =
                  static_cast<T>(SumOfSquares(c.pool(), t.data<T>(), t.NumElements()) / 2);
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        return {g.scope()
                    .AddNode(L2LossGradOp(), {g.input(0), g.grad(0)}, {}, "L2LossGrad")
                    ->output(0)};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {}};
          },
  };
  return op;
}

// ---- GlobalNorm ----

void SameFloatDTypes(InferenceContext& c, int first) {
  c.ExpectDType(first, {kFloat32, kFloat64});
  for (int i = first + 1; i < c.num_inputs(); ++i) c.ExpectSameDType(first, i);
}

// GlobalNormGrad(norm, g, t_0, ..., t_{k-1}) -> k outputs: d norm / d t_i = t_i / norm.
const OpDef& GlobalNormGradOp() {
  static const OpDef op = {
      .name = "GlobalNormGrad",
      .num_inputs = kVariadic,
      .num_outputs = kVariadic,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            if (c.num_inputs() < 3) c.Fail("needs norm, gradient and at least one tensor");
            SameFloatDTypes(c, 0);
            for (int i = 2; i < c.num_inputs(); ++i) {
              c.set_output(i - 2, c.input_dtype(i), c.input_shape(i));
            }
          },
      .kernel =
          [](KernelContext& c) {
            SwitchFloat(c.input(0).dtype(), "GlobalNormGrad", [&](auto tag) {
              using T = decltype(tag);
              const T norm = ScalarInput<T>(c, 0);
              const T k = norm > 0 ? ScalarInput<T>(c, 1) / norm : T(0);
              for (int i = 2; i < c.num_inputs(); ++i) ScaleInto<T>(c, -1, i - 2, c.input(i), k);
              return 0;
            });
          },
      .no_gradient = "second derivatives of GlobalNorm are not implemented",
      .not_swept =
          "built only by GlobalNorm's gradient rule; GlobalNorm's gradient check covers it",
  };
  return op;
}

const OpDef& GlobalNormOp() {
  static const OpDef op = {
      .name = "GlobalNorm",
      .num_inputs = kVariadic,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            if (c.num_inputs() == 0) c.Fail("needs at least one tensor");
            SameFloatDTypes(c, 0);
            c.set_output(0, c.input_dtype(0), Shape{});
          },
      .kernel =
          [](KernelContext& c) {
            Tensor out = c.AllocateOutput(0, Shape{});
            SwitchFloat(c.input(0).dtype(), "GlobalNorm", [&](auto tag) {
              using T = decltype(tag);
              double total = 0;
              for (int i = 0; i < c.num_inputs(); ++i) {
                total += SumOfSquares(c.pool(), c.input(i).data<T>(), c.input(i).NumElements());
              }
              out.data<T>()[0] = static_cast<T>(std::sqrt(total));
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        std::vector<Output> inputs = {g.output(0), g.grad(0)};
        inputs.reserve(2 + g.node().num_inputs());
        for (int i = 0; i < g.node().num_inputs(); ++i) inputs.push_back(g.input(i));
        Node* n = g.scope().AddNode(GlobalNormGradOp(), inputs, {}, "GlobalNormGrad");
        std::vector<GradOutput> grads;
        grads.reserve(n->num_outputs());
        for (int i = 0; i < n->num_outputs(); ++i) grads.push_back(n->output(i));
        return grads;
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), SampleDoubles({4})}, {}};
          },
  };
  return op;
}

// ---- Clipping ----

// ClipToGlobalNorm(t, norm, clip) = t * clip / max(norm, clip); NaN when norm is not
// finite (as TF, so a diverged step is visible rather than silently zeroed).
template <typename T>
T ClipScale(T norm, T clip) {
  if (!std::isfinite(norm)) return std::numeric_limits<T>::quiet_NaN();
  return clip / std::max(norm, clip);
}

void ClipShape(InferenceContext& c) {
  SameFloatDTypes(c, 0);
  ExpectScalar(c, 1);
  ExpectScalar(c, 2);
  c.set_output(0, c.input_dtype(0), c.input_shape(0));
}

// ClipToGlobalNormGrad(t, norm, clip, g) -> (dt, dnorm, dclip). With s = clip / norm when
// norm > clip (else s = 1, constant): dt = g s, dnorm = -sum(g t) clip / norm^2,
// dclip = sum(g t) / norm.
const OpDef& ClipToGlobalNormGradOp() {
  static const OpDef op = {
      .name = "ClipToGlobalNormGrad",
      .num_inputs = 4,
      .num_outputs = 3,
      .output_dtypes = {DTypeRule::SameAsInput(0), DTypeRule::SameAsInput(0),
                        DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            ClipShape(c);
            c.ExpectSameDType(0, 3);
            c.set_output(1, c.input_dtype(0), Shape{});
            c.set_output(2, c.input_dtype(0), Shape{});
          },
      .kernel =
          [](KernelContext& c) {
            nn_internal::ExpectSameRuntimeShape(c, 0, 3);
            SwitchFloat(c.input(0).dtype(), "ClipToGlobalNormGrad", [&](auto tag) {
              using T = decltype(tag);
              const T norm = ScalarInput<T>(c, 1), clip = ScalarInput<T>(c, 2);
              const Tensor& t = c.input(0);
              const Tensor& g = c.input(3);
              T dnorm = 0, dclip = 0;
              if (norm > clip) {
                double dot = 0;
                const T *pt = t.data<T>(), *pg = g.data<T>();
                for (int64_t i = 0; i < t.NumElements(); ++i)
                  dot += static_cast<double>(pt[i]) * pg[i];
                dnorm = static_cast<T>(-dot * clip / (static_cast<double>(norm) * norm));
                dclip = static_cast<T>(dot / norm);
              }
              ScaleInto<T>(c, 3, 0, g, ClipScale(norm, clip));
              c.AllocateOutput(1, Shape{}).template data<T>()[0] = dnorm;
              c.AllocateOutput(2, Shape{}).template data<T>()[0] = dclip;
              return 0;
            });
          },
      .no_gradient = "second derivatives of ClipByGlobalNorm are not implemented",
      .not_swept = "built only by ClipToGlobalNorm's gradient rule; its gradient check covers it",
  };
  return op;
}

const OpDef& ClipToGlobalNormOp() {
  static const OpDef op = {
      .name = "ClipToGlobalNorm",
      .num_inputs = 3,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = ClipShape,
      .kernel =
          [](KernelContext& c) {
            SwitchFloat(c.input(0).dtype(), "ClipToGlobalNorm", [&](auto tag) {
              using T = decltype(tag);
              ScaleInto<T>(c, 0, 0, c.input(0),
                           ClipScale(ScalarInput<T>(c, 1), ScalarInput<T>(c, 2)));
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        Node* n = g.scope().AddNode(ClipToGlobalNormGradOp(),
                                    {g.input(0), g.input(1), g.input(2), g.grad(0)}, {},
                                    "ClipToGlobalNormGrad");
        return {n->output(0), n->output(1), n->output(2)};
      },
      .sample =
          [] {
            return OpSample{
                {SampleDoubles({2, 3}), Tensor::Scalar<double>(3.0), Tensor::Scalar<double>(1.0)},
                {}};
          },
  };
  return op;
}

}  // namespace

Output L2Loss(const Scope& scope, Input t) {
  return scope.AddNode(L2LossOp(), {AsOutput(scope, t)}, {}, "L2Loss")->output(0);
}

Output GlobalNorm(const Scope& scope, const std::vector<Output>& t_list) {
  return scope.AddNode(GlobalNormOp(), t_list, {}, "global_norm")->output(0);
}

ClippedList ClipByGlobalNorm(const Scope& scope, const std::vector<Output>& t_list,
                             Input clip_norm) {
  if (t_list.empty()) {
    throw InvalidArgument("ClipByGlobalNorm '", scope.FullName("clip_by_global_norm"),
                          "': t_list is empty");
  }
  std::vector<Output> present;
  for (const Output& t : t_list) {
    if (t.valid()) present.push_back(t);
  }
  if (present.empty()) {
    throw InvalidArgument("ClipByGlobalNorm '", scope.FullName("clip_by_global_norm"),
                          "': every tensor in t_list is absent");
  }
  Scope s = scope.NewSubScope("clip_by_global_norm");
  ClippedList result;
  result.global_norm = GlobalNorm(s, present);
  Output clip = AsOutput(s, clip_norm, present[0].dtype());
  for (const Output& t : t_list) {
    result.clipped.push_back(
        t.valid()
            ? s.AddNode(ClipToGlobalNormOp(), {t, result.global_norm, clip}, {}, "ClipToGlobalNorm")
                  ->output(0)
            : Output());
  }
  return result;
}

void nn_internal::RegisterNnNormOps(OpRegistry& registry) {
  for (const OpDef* op : {&L2LossOp(), &L2LossGradOp(), &GlobalNormOp(), &GlobalNormGradOp(),
                          &ClipToGlobalNormOp(), &ClipToGlobalNormGradOp()}) {
    registry.Register(*op);
  }
}

}  // namespace loom
