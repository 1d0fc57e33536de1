// ClipByValue and Select (ternary, broadcasting) and Cast.
#include <type_traits>

#include "loom/ops/elementwise.h"
#include "loom/ops/math.h"
#include "loom/ops/math_internal.h"
#include "loom/ops/reduce.h"

namespace loom {
namespace {

using namespace math_internal;  // NOLINT: the math files' own helpers
using internal::ForwardAnyInputOrAllocate;
using internal::RuntimeBroadcastShape;
using internal::TernaryBroadcast;
using internal::UnaryMap;

inline constexpr Attr<DType> kDstT{"DstT"};
inline constexpr Attr<DType> kSrcT{"SrcT"};

Shape BroadcastThree(const InferenceContext& c) {
  return BroadcastShapes(c, BroadcastShapes(c, c.input_shape(0), c.input_shape(1)),
                         c.input_shape(2));
}

Shape RuntimeBroadcastThree(const KernelContext& c) {
  return RuntimeBroadcastShape(c, RuntimeBroadcastShape(c, c.input(0).shape(), c.input(1).shape()),
                               c.input(2).shape());
}

const OpDef& ClipByValueOp() {
  static const OpDef op = {
      .name = "ClipByValue",
      .num_inputs = 3,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            ExpectDomain(c, 0, Domain::kNumeric);
            c.ExpectSameDType(0, 1);
            c.ExpectSameDType(0, 2);
            c.set_output(0, c.input_dtype(0), BroadcastThree(c));
          },
      .kernel =
          [](KernelContext& c) {
            const Shape shape = RuntimeBroadcastThree(c);
            Tensor out = ForwardAnyInputOrAllocate(c, {0}, shape);
            const Tensor &x = c.input(0), &lo = c.input(1), &hi = c.input(2);
            SwitchNumeric(x.dtype(), "ClipByValue", [&](auto tag) {
              using T = decltype(tag);
              TernaryBroadcast(c.pool(), x.shape(), x.data<T>(), lo.shape(), lo.data<T>(),
                               hi.shape(), hi.data<T>(), shape, out.data<T>(), [](T v, T l, T h) {
                                 v = v < l ? l : v;
                                 return v > h ? h : v;
                               });
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // clip(x, lo, hi) = min(max(x, lo), hi), as the kernel computes it (also when
        // lo > hi): with m = max(x, lo), d/dhi = [m > hi], d/dlo = [x < lo][m <= hi],
        // d/dx = [x >= lo][m <= hi].
        const Scope& s = g.scope();
        Output x = g.input(0), lo = g.input(1), hi = g.input(2), dz = g.grad();
        Output zero = ZeroOf(s, dz);
        Output above = Greater(s, Maximum(s, x, lo), hi);
        Output below = LogicalAnd(s, Less(s, x, lo), LogicalNot(s, above));
        Output inside = LogicalNot(s, LogicalOr(s, below, above));
        return {SumToShapeOf(s, Select(s, inside, dz, zero), x),
                SumToShapeOf(s, Select(s, below, dz, zero), lo),
                SumToShapeOf(s, Select(s, above, dz, zero), hi)};
      },
  };
  return op;
}

const OpDef& SelectOp() {
  static const OpDef op = {
      .name = "Select",
      .num_inputs = 3,
      .output_dtypes = {DTypeRule::SameAsInput(1)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kBool});
            c.ExpectSameDType(1, 2);
            c.set_output(0, c.input_dtype(1), BroadcastThree(c));
          },
      .kernel =
          [](KernelContext& c) {
            const Shape shape = RuntimeBroadcastThree(c);
            Tensor out = ForwardAnyInputOrAllocate(c, {1, 2}, shape);
            const Tensor &cond = c.input(0), &a = c.input(1), &b = c.input(2);
            Dispatch<Domain::kComparable>(a.dtype(), "Select", [&](auto tag) {
              using T = decltype(tag);
              TernaryBroadcast(c.pool(), cond.shape(), cond.data<bool>(), a.shape(), a.data<T>(),
                               b.shape(), b.data<T>(), shape, out.data<T>(),
                               [](bool k, T u, T v) { return k ? u : v; });
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // d/da select(c, a, b) = [c], d/db = [!c]; the condition gets none
        const Scope& s = g.scope();
        Output cond = g.input(0), dz = g.grad();
        Output zero = ZeroOf(s, dz);
        return {GradOutput(), SumToShapeOf(s, Select(s, cond, dz, zero), g.input(1)),
                SumToShapeOf(s, Select(s, cond, zero, dz), g.input(2))};
      },
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<bool>({true, false, true}), SampleDoubles({3}),
                             SampleDoubles({3})},
                            {},
                            false};
          },
  };
  return op;
}

// ---------------------------------------------------------------------------------------
// Cast.

template <typename Fn>
void DispatchCastable(DType dtype, Fn&& fn) {
  Dispatch<Domain::kComparable>(dtype, "Cast", fn);
}

const OpDef& CastOp() {
  static const OpDef op = {
      .name = "Cast",
      .num_inputs = 1,
      .attrs = {kDstT.Required(), kSrcT.Optional()},
      .output_dtypes = {DTypeRule::FromAttr(kDstT)},
      .shape =
          [](InferenceContext& c) {
            ExpectDomain(c, 0, Domain::kComparable);
            c.set_output(0, c.attr(kDstT), c.input_shape(0));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            const DType dst = c.attr(kDstT);
            if (x.dtype() == dst) return c.set_output(0, x);
            Tensor out = c.ForwardInputOrAllocate(0, 0, x.shape());
            DispatchCastable(x.dtype(), [&](auto src_tag) {
              using S = decltype(src_tag);
              DispatchCastable(dst, [&](auto dst_tag) {
                using D = decltype(dst_tag);
                UnaryMap(c.pool(), x.data<S>(), out.data<D>(), x.NumElements(), [](S v) {
                  if constexpr (std::is_same_v<D, bool>) {
                    return v != S(0);
                  } else {
                    return static_cast<D>(v);
                  }
                });
              });
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // d/dx cast(x) = 1 between floating dtypes. A cast to or from an integer or
        // bool is a step function: no gradient flows through it (TF's rule).
        DType src = g.input(0).dtype(), dst = g.output().dtype();
        if (!IsFloating(src) || !IsFloating(dst)) return {GradOutput()};
        return {Cast(g.scope(), g.grad(), src)};
      },
      .no_gradient = "a cast to or from an integer or bool passes no gradient",
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {kDstT(kFloat32)}, false};
          },
  };
  return op;
}

}  // namespace

Output ClipByValue(const Scope& s, Input x, Input lo, Input hi) {
  Output xo = AsOutput(s, x);
  Output l = AsOutput(s, lo, xo.dtype());
  Output h = AsOutput(s, hi, xo.dtype());
  return s.AddNode(ClipByValueOp(), {xo, l, h}, {}, "ClipByValue")->output(0);
}

Output Select(const Scope& s, Input cond, Input a, Input b) {
  Output c = AsOutput(s, cond, kBool);
  auto [ao, bo] = AsOutputs(s, a, b);
  return s.AddNode(SelectOp(), {c, ao, bo}, {}, "Select")->output(0);
}

Output Cast(const Scope& s, Input x, DType dtype) {
  Output xo = AsOutput(s, x);
  if (xo.dtype() == dtype) return xo;
  return s.AddNode(CastOp(), {xo}, {kDstT(dtype), kSrcT(xo.dtype())}, "Cast")->output(0);
}

void math_internal::RegisterMathSelectOps(OpRegistry& registry) {
  for (const OpDef* op : {&ClipByValueOp(), &SelectOp(), &CastOp()}) registry.Register(*op);
}

}  // namespace loom
