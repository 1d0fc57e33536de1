// Array ops that keep every element: Reshape, ExpandDims, Squeeze, EnsureShape; Fill and the
// shape-describing ops; the helpers of array_internal.h. Transpose is in
// array_transpose.cc, Concat/Split/Tile/Pad in array_join.cc, Slice/StridedSlice/Gather/
// OneHot in array_index.cc.
#include "loom/ops/array.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "loom/ops/array_internal.h"
#include "loom/ops/attr_keys.h"

namespace loom {

using namespace array_internal;  // NOLINT: this file's own helpers

namespace array_internal {

std::string DimsString(const std::vector<int64_t>& dims) {
  return StrCat("[", StrJoin(dims, ","), "]");
}

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

std::vector<int64_t> DimsFromTensor(const KernelContext& c, const Tensor& t,
                                    std::string_view what) {
  if (t.rank() != 1) c.Fail(what, " must be a vector, got shape ", t.shape());
  std::vector<int64_t> dims(t.NumElements());
  if (t.dtype() == kInt64) {
    std::copy_n(t.data<int64_t>(), dims.size(), dims.begin());
  } else if (t.dtype() == kInt32) {
    std::copy_n(t.data<int32_t>(), dims.size(), dims.begin());
  } else {
    c.Fail(what, " must be int32 or int64, got ", DTypeName(t.dtype()));
  }
  return dims;
}

void ShapedLikeInput1(InferenceContext& c) {
  c.set_output(0, c.input_dtype(0), StaticShapeValue(c.input(1)));
}

Output AddShapedGrad(const GradContext& g, const OpDef& grad_op, AttrMap attrs) {
  Output shape = ShapeOfOrConst(g.scope(), g.input(0));
  return g.scope().AddNode(grad_op, {g.grad(0), shape}, std::move(attrs), grad_op.name)->output(0);
}

Output ShapeOfOrConst(const Scope& scope, const Output& x) {
  if (x.shape().fully_defined())
    return Const(scope, Tensor::FromVector(x.shape().dims().ToVector()));
  return ShapeOf(scope, x);
}

}  // namespace array_internal

namespace {

inline constexpr Attr<std::vector<int64_t>> kTargetShape{"shape"};  // Reshape
using op_attrs::kAxes;
using op_attrs::kAxis;
inline constexpr Attr<std::vector<int64_t>> kDims{"dims"};

void NoInputShape(InferenceContext& c, DType dtype, const Shape& shape) {
  c.set_output(0, dtype, shape);
}

// Resolves a target shape with at most one -1 against `in` (partial). Fails with the
// Reshape message on an impossible reshape; the -1 stays unknown when `in` is partial.
template <typename Ctx>
std::vector<int64_t> ResolveReshape(const Ctx& c, const Shape& in, std::vector<int64_t> target) {
  int infer = -1;
  int64_t known = 1;  // the product of the nonzero known dims, checked: shapes come from files
  bool zero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer >= 0)
        c.Fail("only one dimension of the target shape ", DimsString(target), " may be -1");
      infer = static_cast<int>(i);
    } else if (target[i] < 0) {
      c.Fail("target shape ", DimsString(target), " has a negative dimension");
    } else if (target[i] == 0) {
      zero = true;
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      c.Fail("target shape ", DimsString(target), " has more elements than an int64 can count");
    }
  }
  if (zero) known = 0;
  if (!in.fully_defined()) return target;
  const int64_t n = in.num_elements();
  auto fail = [&] { c.Fail("cannot reshape ", in, " (", n, " elements) to ", DimsString(target)); };
  if (infer >= 0) {
    if (known == 0) {
      if (n != 0) fail();
      c.Fail("cannot infer the -1 in ", DimsString(target), " for an empty tensor ", in);
    }
    if (n % known != 0) fail();
    target[infer] = n / known;
  } else if (known != n) {
    fail();
  }
  return target;
}

// ---- Reshape family -------------------------------------------------------------------

const OpDef& ReshapeLikeOp();

std::vector<GradOutput> ReshapeGrad(const GradContext& g) {
  // Reshaping moves no values: dx = reshape(dy, shape(x)). With at most one unknown dim
  // the static shape says it all (as a -1), and the backward pass need not keep x alive.
  std::vector<GradOutput> grads(g.node().num_inputs());
  const Shape& xs = g.input(0).shape();
  int unknown = 0;
  int64_t known = 1;
  for (int64_t d : xs.rank_known() ? xs.dims() : std::vector<int64_t>{}) {
    if (d < 0)
      ++unknown;
    else
      known *= d;
  }
  if (xs.rank_known() && (unknown == 0 || (unknown == 1 && known > 0))) {
    grads[0] = Reshape(g.scope(), g.grad(0), xs.dims());
  } else {
    grads[0] = ReshapeLike(g.scope(), g.grad(0), g.input(0));
  }
  return grads;
}

const OpDef& ReshapeOp() {
  static const OpDef op = {
      .name = "Reshape",
      .num_inputs = 1,
      .attrs = {kTargetShape.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const auto& target = c.attr(kTargetShape);
            c.set_output(0, c.input_dtype(0), Shape(ResolveReshape(c, c.input_shape(0), target)));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            auto dims = ResolveReshape(c, x.shape(), c.attr(kTargetShape));
            c.set_output(0, x.Reshaped(Shape(dims)));
          },
      .grad = ReshapeGrad,
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {kTargetShape(std::vector<int64_t>{3, -1})}};
          },
  };
  return op;
}

const OpDef& ReshapeDynamicOp() {
  static const OpDef op = {
      .name = "ReshapeDynamic",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(1, {kInt32, kInt64});
            c.ExpectRank(1, 1);
            Shape target = StaticShapeValue(c.input(1));
            if (!target.rank_known()) {
              c.set_output(0, c.input_dtype(0), Shape::Unknown());
              return;
            }
            // Unknown entries and a literal -1 are alike here: with exactly one of them
            // and a known element count, it is determined.
            std::vector<int64_t> dims = target.dims();
            int unknown = 0;
            for (int64_t d : dims) unknown += d < 0;
            if (unknown <= 1) dims = ResolveReshape(c, c.input_shape(0), dims);
            c.set_output(0, c.input_dtype(0), Shape(dims));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            auto dims = ResolveReshape(c, x.shape(), DimsFromTensor(c, c.input(1), "shape"));
            c.set_output(0, x.Reshaped(Shape(dims)));
          },
      .grad = ReshapeGrad,
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3}), Tensor::FromVector<int64_t>({6})}, {}, false};
          },
  };
  return op;
}

const OpDef& ReshapeLikeOp() {
  static const OpDef op = {
      .name = "ReshapeLike",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const Shape& in = c.input_shape(0);
            const Shape& like = c.input_shape(1);
            if (in.fully_defined() && like.fully_defined() &&
                in.num_elements() != like.num_elements()) {
              c.Fail("cannot reshape ", in, " (", in.num_elements(), " elements) like ", like);
            }
            c.set_output(0, c.input_dtype(0), like);
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            const Shape& like = c.input(1).shape();
            if (x.NumElements() != like.num_elements()) {
              c.Fail("cannot reshape ", x.shape(), " (", x.NumElements(), " elements) like ", like);
            }
            c.set_output(0, x.Reshaped(like));
          },
      .grad = ReshapeGrad,
  };
  return op;
}

const OpDef& ExpandDimsOp() {
  static const OpDef op = {
      .name = "ExpandDims",
      .num_inputs = 1,
      .attrs = {kAxis.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const Shape& in = c.input_shape(0);
            if (!in.rank_known()) return c.set_output(0, c.input_dtype(0), Shape::Unknown());
            std::vector<int64_t> dims = in.dims();
            int axis = CanonicalAxis(c, c.attr(kAxis), in.rank() + 1);
            dims.insert(dims.begin() + axis, 1);
            c.set_output(0, c.input_dtype(0), Shape(dims));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            std::vector<int64_t> dims = x.shape().dims();
            int axis = CanonicalAxis(c, c.attr(kAxis), x.rank() + 1);
            dims.insert(dims.begin() + axis, 1);
            c.set_output(0, x.Reshaped(Shape(dims)));
          },
      .grad = ReshapeGrad,
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {kAxis(1)}};
          },
  };
  return op;
}

// Squeezed dims of `in`; fails when a listed axis is known and not 1. With `axes` empty
// and an unknown dim, the result's rank is unknown (nullopt).
template <typename Ctx>
std::optional<std::vector<int64_t>> SqueezeDims(const Ctx& c, const Shape& in,
                                                const std::vector<int64_t>& axes) {
  if (!in.rank_known()) return std::nullopt;
  std::vector<char> drop(in.rank(), 0);
  for (int64_t a : axes) {
    int axis = CanonicalAxis(c, a, in.rank());
    if (in.dim(axis) != 1 && in.dim(axis) != kUnknownDim) {
      c.Fail("cannot squeeze dim ", axis, " of ", in, ": its size is ", in.dim(axis), ", not 1");
    }
    drop[axis] = 1;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (axes.empty()) {
      if (in.dim(i) == kUnknownDim) return std::nullopt;
      if (in.dim(i) == 1) continue;
    } else if (drop[i]) {
      continue;
    }
    dims.push_back(in.dim(i));
  }
  return dims;
}

const OpDef& SqueezeOp() {
  static const OpDef op = {
      .name = "Squeeze",
      .num_inputs = 1,
      .attrs = {kAxes.Default(std::vector<int64_t>{})},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            auto dims = SqueezeDims(c, c.input_shape(0), c.attr(kAxes));
            c.set_output(0, c.input_dtype(0), dims ? Shape(*dims) : Shape::Unknown());
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            auto dims = SqueezeDims(c, x.shape(), c.attr(kAxes));
            c.set_output(0, x.Reshaped(Shape(*dims)));
          },
      .grad = ReshapeGrad,
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 1, 3})}, {kAxes(std::vector<int64_t>{1})}};
          },
  };
  return op;
}

// ---- Fill and shape descriptions -------------------------------------------------------

void FillKernel(KernelContext& c, const std::vector<int64_t>& dims) {
  const Tensor& value = c.input(c.num_inputs() - 1);
  if (value.NumElements() != 1 || value.rank() != 0) {
    c.Fail("value must be a scalar, got shape ", value.shape());
  }
  for (int64_t d : dims)
    if (d < 0) c.Fail("dims ", DimsString(dims), " must be non-negative");
  Tensor y = c.AllocateOutput(0, Shape(dims));
  SwitchAll(y.dtype(), "Fill", [&](auto tag) {
    using T = decltype(tag);
    std::fill_n(static_cast<T*>(y.raw_data()), y.NumElements(), *Raw<T>(value));
  });
}

constexpr const char* kFillNoGradient =
    "Fill's value gradient is a reduction; build Mul(Ones(...), value) to differentiate";

const OpDef& FillOp() {
  static const OpDef op = {
      .name = "Fill",
      .num_inputs = 1,
      .attrs = {kDims.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectRank(0, 0);
            const auto& dims = c.attr(kDims);
            for (int64_t d : dims)
              if (d < 0) c.Fail("dims ", DimsString(dims), " must be non-negative");
            c.set_output(0, c.input_dtype(0), Shape(dims));
          },
      .kernel = [](KernelContext& c) { FillKernel(c, c.attr(kDims)); },
      .no_gradient = kFillNoGradient,
      .sample =
          [] {
            return OpSample{{Tensor::Scalar<double>(2.0)}, {kDims(std::vector<int64_t>{2, 3})}};
          },
  };
  return op;
}

const OpDef& FillDynamicOp() {
  static const OpDef op = {
      .name = "FillDynamic",
      .num_inputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(1)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt32, kInt64});
            c.ExpectRank(0, 1);
            c.ExpectRank(1, 0);
            c.set_output(0, c.input_dtype(1), StaticShapeValue(c.input(0)));
          },
      .kernel = [](KernelContext& c) { FillKernel(c, DimsFromTensor(c, c.input(0), "dims")); },
      .no_gradient = kFillNoGradient,
      .sample =
          [] {
            return OpSample{
                {Tensor::FromVector<int64_t>({2, 3}), Tensor::Scalar<double>(2.0)}, {}, false};
          },
  };
  return op;
}

constexpr const char* kShapeNoGradient = "shape descriptions are integers";

const OpDef& ShapeOp() {
  static const OpDef op = {
      .name = "Shape",
      .num_inputs = 1,
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape =
          [](InferenceContext& c) {
            const Shape& in = c.input_shape(0);
            c.set_output(0, kInt64, Shape{in.rank_known() ? in.rank() : kUnknownDim});
          },
      .kernel =
          [](KernelContext& c) {
            c.set_output(0, Tensor::FromVector(c.input(0).shape().dims().ToVector()));
          },
      .no_gradient = kShapeNoGradient,
  };
  return op;
}

const OpDef& SizeOp() {
  static const OpDef op = {
      .name = "Size",
      .num_inputs = 1,
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape = [](InferenceContext& c) { NoInputShape(c, kInt64, Shape{}); },
      .kernel =
          [](KernelContext& c) {
            c.set_output(0, Tensor::Scalar<int64_t>(c.input(0).NumElements()));
          },
      .no_gradient = kShapeNoGradient,
  };
  return op;
}

const OpDef& RankOp() {
  static const OpDef op = {
      .name = "Rank",
      .num_inputs = 1,
      .output_dtypes = {DTypeRule::Fixed(kInt64)},
      .shape = [](InferenceContext& c) { NoInputShape(c, kInt64, Shape{}); },
      .kernel =
          [](KernelContext& c) { c.set_output(0, Tensor::Scalar<int64_t>(c.input(0).rank())); },
      .no_gradient = kShapeNoGradient,
  };
  return op;
}

// EnsureShape (tf.ensure_shape, and what the Python front end's Tensor.set_shape builds):
// x unchanged, with the static shape refined by `shape` (unknown dims and an unknown rank
// take the given ones); at run time the value's shape must be compatible with `shape`.
const OpDef& EnsureShapeOp() {
  static const OpDef op = {
      .name = "EnsureShape",
      .num_inputs = 1,
      .attrs = {op_attrs::kShape.Required()},
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            const Shape& want = c.attr(op_attrs::kShape);
            if (!c.input_shape(0).IsCompatibleWith(want)) {
              c.Fail("the input's shape ", c.input_shape(0), " is not compatible with ", want);
            }
            c.set_output(0, c.input_dtype(0), c.input_shape(0).MergeWith(want));
          },
      .kernel =
          [](KernelContext& c) {
            const Shape& want = c.attr(op_attrs::kShape);
            if (!c.input(0).shape().IsCompatibleWith(want)) {
              c.Fail("the value's shape ", c.input(0).shape(), " is not compatible with ", want,
                     " (the shape set_shape / ensure_shape declared)");
            }
            c.set_output(0, c.input(0));
          },
      // d/dx x = 1: the gradient passes through.
      .grad = [](const GradContext& g) { return std::vector<GradOutput>{g.grad(0)}; },
      .sample =
          [] {
            return OpSample{{SampleDoubles({2, 3})}, {op_attrs::kShape(Shape{2, kUnknownDim})}};
          },
  };
  return op;
}

}  // namespace

// ---- Builders ---------------------------------------------------------------------------

Output Reshape(const Scope& scope, Input x, const std::vector<int64_t>& shape) {
  return scope.AddNode(ReshapeOp(), {AsOutput(scope, x)}, {kTargetShape(shape)}, "Reshape")
      ->output(0);
}

Output Reshape(const Scope& scope, Input x, Output shape) {
  return scope.AddNode(ReshapeDynamicOp(), {AsOutput(scope, x), shape}, {}, "Reshape")->output(0);
}

Output ReshapeLike(const Scope& scope, Input x, Output like) {
  return scope.AddNode(ReshapeLikeOp(), {AsOutput(scope, x), like}, {}, "ReshapeLike")->output(0);
}

Output ExpandDims(const Scope& scope, Input x, int64_t axis) {
  return scope.AddNode(ExpandDimsOp(), {AsOutput(scope, x)}, {kAxis(axis)}, "ExpandDims")
      ->output(0);
}

Output Squeeze(const Scope& scope, Input x, const std::vector<int64_t>& axes) {
  return scope.AddNode(SqueezeOp(), {AsOutput(scope, x)}, {kAxes(axes)}, "Squeeze")->output(0);
}

Output Fill(const Scope& scope, const std::vector<int64_t>& dims, Input value) {
  return scope.AddNode(FillOp(), {AsOutput(scope, value)}, {kDims(dims)}, "Fill")->output(0);
}

Output Fill(const Scope& scope, Output dims, Input value) {
  return scope.AddNode(FillDynamicOp(), {dims, AsOutput(scope, value)}, {}, "Fill")->output(0);
}

Output Zeros(const Scope& scope, const Shape& shape, DType dtype) {
  if (!shape.fully_defined()) {
    throw InvalidArgument("Zeros: shape ", shape, " must be fully defined; use ZerosLike");
  }
  return Fill(scope.NewSubScope("zeros"), shape.dims(), Input(0).ToTensor(dtype));
}

Output Ones(const Scope& scope, const Shape& shape, DType dtype) {
  if (!shape.fully_defined()) {
    throw InvalidArgument("Ones: shape ", shape, " must be fully defined; use OnesLike");
  }
  return Fill(scope.NewSubScope("ones"), shape.dims(), Input(1).ToTensor(dtype));
}

Output ShapeOf(const Scope& scope, Input x) {
  return scope.AddNode(ShapeOp(), {AsOutput(scope, x)}, {}, "Shape")->output(0);
}

Output Size(const Scope& scope, Input x) {
  return scope.AddNode(SizeOp(), {AsOutput(scope, x)}, {}, "Size")->output(0);
}

Output Rank(const Scope& scope, Input x) {
  return scope.AddNode(RankOp(), {AsOutput(scope, x)}, {}, "Rank")->output(0);
}

Shape StaticShapeValue(const Output& t) {
  const Node* n = t.node;
  Shape fallback = t.shape().rank_known() && t.shape().rank() == 1 && t.shape().dim(0) >= 0
                       ? Shape(std::vector<int64_t>(t.shape().dim(0), kUnknownDim))
                       : Shape::Unknown();
  if (n->op_def().role == OpRole::kConst) {
    const Tensor& v = n->attr(kConstValue);
    if (v.rank() != 1) return fallback;
    if (v.dtype() == kInt64)
      return Shape(std::vector<int64_t>(v.flat<int64_t>().begin(), v.flat<int64_t>().end()));
    if (v.dtype() == kInt32)
      return Shape(std::vector<int64_t>(v.flat<int32_t>().begin(), v.flat<int32_t>().end()));
    return fallback;
  }
  if (n->op() == "Shape") return n->input(0).shape();
  // tf.shape(x) is int32 in TF 1.15: the front end's Cast of Shape's int64 keeps the value.
  if (n->op() == "Cast" && n->num_inputs() == 1 &&
      (n->input(0).dtype() == kInt32 || n->input(0).dtype() == kInt64)) {
    return StaticShapeValue(n->input(0));
  }
  // The front end cuts a shape's gradient path (tf.zeros(tf.shape(x))): the value is kept.
  if ((n->op() == "StopGradient" || n->op() == "Identity") && n->num_inputs() == 1) {
    return StaticShapeValue(n->input(0));
  }
  if (n->op() == "Concat") {
    std::vector<int64_t> dims;
    for (const Output& in : n->inputs()) {
      Shape part = StaticShapeValue(in);
      if (!part.rank_known()) return fallback;
      dims.insert(dims.end(), part.dims().begin(), part.dims().end());
    }
    return Shape(dims);
  }
  if (n->op() == "Slice") {
    // Entries [begin, begin + size) of a shape vector.
    Shape whole = StaticShapeValue(n->input(0));
    if (!whole.rank_known() || n->attr(array_internal::kSliceBegin).size() != 1) return fallback;
    const int64_t begin = n->attr(array_internal::kSliceBegin)[0];
    int64_t size = n->attr(array_internal::kSliceSize)[0];
    if (size == -1) size = whole.rank() - begin;
    return Shape(
        std::vector<int64_t>(whole.dims().begin() + begin, whole.dims().begin() + begin + size));
  }
  return fallback;
}

void RegisterArrayOps(OpRegistry& registry) {
  for (const OpDef* op :
       {&ReshapeOp(), &ReshapeDynamicOp(), &ReshapeLikeOp(), &ExpandDimsOp(), &SqueezeOp(),
        &FillOp(), &FillDynamicOp(), &ShapeOp(), &SizeOp(), &RankOp(), &EnsureShapeOp()}) {
    registry.Register(*op);
  }
  RegisterArrayTransposeOps(registry);
  RegisterArrayJoinOps(registry);
  RegisterArrayIndexOps(registry);
  RegisterArrayGatherOps(registry);
  RegisterArraySequenceOps(registry);
}

}  // namespace loom
