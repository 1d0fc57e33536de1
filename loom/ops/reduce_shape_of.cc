#include "loom/ops/attr_keys.h"
#include "loom/ops/elementwise.h"
#include "loom/ops/math.h"
#include "loom/ops/reduce.h"
#include "loom/ops/reduce_internal.h"

namespace loom {
namespace {

using op_attrs::kAxes;

using reduce_internal::ReduceMask;

// ---------------------------------------------------------------------------------------
// Gradient helpers: broadcasting to, and summing back to, another tensor's shape.

// x's shape as it broadcasts against like_shape: with reduction axes and a lower rank,
// the removed dims come back as 1s.
Shape AlignedShape(const KernelContext& c, const Shape& x_shape, const Shape& like_shape,
                   const std::vector<int64_t>& axes) {
  if (axes.empty() || x_shape.rank() == like_shape.rank()) return x_shape;
  auto mask = ReduceMask(c.node(), like_shape, axes);
  std::vector<int64_t> dims;
  int next = 0;
  for (int d = 0; d < like_shape.rank(); ++d) {
    if (mask[d]) {
      dims.push_back(1);
    } else {
      if (next >= x_shape.rank()) break;
      dims.push_back(x_shape.dims()[next++]);
    }
  }
  if (next != x_shape.rank() || static_cast<int>(dims.size()) != like_shape.rank()) {
    c.Fail("shape ", x_shape, " is not ", like_shape, " reduced over axes [", StrJoin(axes, ","),
           "]");
  }
  return Shape(std::move(dims));
}

const OpDef& BroadcastToShapeOfOp() {
  static const OpDef op = {
      .name = "BroadcastToShapeOf",
      .num_inputs = 2,
      .attrs = {kAxes.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.input_dtype(0), c.input_shape(1)); },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            const Shape& like = c.input(1).shape();
            if (x.shape() == like) return c.set_output(0, x);
            const Shape aligned = AlignedShape(c, x.shape(), like, c.attr(kAxes));
            if (internal::RuntimeBroadcastShape(c, aligned, like) != like) {
              c.Fail("cannot broadcast shape ", x.shape(), " to ", like);
            }
            Tensor out = c.AllocateOutput(0, like);
            SwitchNumeric(x.dtype(), "BroadcastToShapeOf", [&](auto tag) {
              using T = decltype(tag);
              internal::BroadcastCopy(c.pool(), aligned, x.data<T>(), like, out.data<T>());
              return 0;
            });
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // Broadcasting copies x: its gradient sums the copies back.
        const Scope& s = g.scope();
        Output x = g.input(0), like = g.input(1);
        const auto& axes = g.attr(kAxes);
        if (axes.empty()) return {SumToShapeOf(s, g.grad(), x), GradOutput()};
        if (!x.shape().rank_known() || !like.shape().rank_known()) {
          throw Unimplemented("gradient of ", g.node().description(), " needs known ranks");
        }
        bool keep = x.shape().rank() == like.shape().rank();
        return {Sum(s, g.grad(), axes, {.keep_dims = keep}), GradOutput()};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({3}), SampleDoubles({2, 3})},
                            {kAxes(std::vector<int64_t>{})},
                            false};
          },
  };
  return op;
}

const OpDef& SumToShapeOfOp() {
  static const OpDef op = {
      .name = "SumToShapeOf",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = [](InferenceContext& c) { c.set_output(0, c.input_dtype(0), c.input_shape(1)); },
      .kernel =
          [](KernelContext& c) {
            const Tensor& grad = c.input(0);
            const Shape& target = c.input(1).shape();
            if (grad.shape() == target) return c.set_output(0, grad);
            const int rank = grad.rank(), lead = grad.rank() - target.rank();
            if (lead < 0) {
              c.Fail("gradient of shape ", grad.shape(), " cannot be summed to shape ", target);
            }
            std::vector<bool> mask(rank, false);
            for (int d = 0; d < rank; ++d) {
              const int64_t gd = grad.dim(d);
              const int64_t td = d >= lead ? target.dims()[d - lead] : 1;
              if (td != gd && td != 1) {
                c.Fail("gradient of shape ", grad.shape(), " cannot be summed to shape ", target);
              }
              mask[d] = d < lead || (td == 1 && gd != 1);
            }
            c.set_output(0, reduce_internal::SumOverMask(c.pool(), grad, mask, "SumToShapeOf")
                                .Reshaped(target));
          },
      .grad = [](const GradContext& g) -> std::vector<GradOutput> {
        // Summing copies: the gradient is broadcast back; the shape source gets none.
        return {BroadcastToShapeOf(g.scope(), g.grad(), g.input(0)), GradOutput()};
      },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), SampleDoubles({3})}, {}, false};
          },
  };
  return op;
}

}  // namespace

Output BroadcastToShapeOf(const Scope& s, Output x, Output like, std::vector<int64_t> axes) {
  return s
      .AddNode(BroadcastToShapeOfOp(), {x, like}, {kAxes(std::move(axes))}, "BroadcastToShapeOf")
      ->output(0);
}

Output SumToShapeOf(const Scope& s, Output grad, Output x) {
  return s.AddNode(SumToShapeOfOp(), {grad, x}, {}, "SumToShapeOf")->output(0);
}

void reduce_internal::RegisterShapeOfOps(OpRegistry& registry) {
  registry.Register(BroadcastToShapeOfOp());
  registry.Register(SumToShapeOfOp());
}

}  // namespace loom
