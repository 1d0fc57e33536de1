#include "loom/ops/grad_support.h"

#include <cstring>

namespace loom {
namespace {

void SameAsInput(InferenceContext& c) { c.set_output(0, c.input_dtype(0), c.input_shape(0)); }

const OpDef& AddNOp() {
  static const OpDef op = {
      .name = "AddN",
      .num_inputs = kVariadic,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape =
          [](InferenceContext& c) {
            if (c.num_inputs() == 0) c.Fail("needs at least one input");
            Shape merged = c.input_shape(0);
            for (int i = 1; i < c.num_inputs(); ++i) {
              c.ExpectSameDType(0, i);
              if (!merged.IsCompatibleWith(c.input_shape(i))) {
                c.Fail("input ", i, " has shape ", c.input_shape(i), ", expected ", merged);
              }
              merged = merged.MergeWith(c.input_shape(i));
            }
            c.set_output(0, c.input_dtype(0), merged);
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& first = c.input(0);
            for (int i = 1; i < c.num_inputs(); ++i) {
              if (c.input(i).shape() != first.shape()) {
                c.Fail("input ", i, " has shape ", c.input(i).shape(), ", input 0 has ",
                       first.shape());
              }
            }
            Tensor out = c.ForwardInputOrAllocate(0, 0, first.shape());
            SwitchNumeric(first.dtype(), "AddN", [&](auto tag) {
              using T = decltype(tag);
              T* o = out.data<T>();
              const int k = c.num_inputs();
              c.pool().ParallelFor(out.NumElements(), 16384, [&](int64_t b, int64_t e) {
                if (o != c.input(0).data<T>()) {
                  std::memcpy(o + b, c.input(0).data<T>() + b, (e - b) * sizeof(T));
                }
                for (int i = 1; i < k; ++i) {
                  const T* x = c.input(i).data<T>();
                  for (int64_t j = b; j < e; ++j) o[j] += x[j];
                }
              });
              return 0;
            });
          },
      .grad =
          [](const GradContext& g) {
            return std::vector<GradOutput>(g.node().num_inputs(), GradOutput(g.grad(0)));
          },
      .sample =
          [] {
            return OpSample{
                {SampleDoubles({2, 3}, 1), SampleDoubles({2, 3}, 2), SampleDoubles({2, 3}, 3)}, {}};
          },
  };
  return op;
}

template <int kValue>
const OpDef& FillLikeOp(const char* name) {
  static const OpDef op = {
      .name = name,
      .num_inputs = 1,
      .output_dtypes = {DTypeRule::SameAsInput(0)},
      .shape = SameAsInput,
      .kernel =
          [](KernelContext& c) {
            Tensor out = c.AllocateOutput(0, c.input(0).shape());
            SwitchNumeric(out.dtype(), c.node().op(), [&](auto tag) {
              using T = decltype(tag);
              T* o = out.data<T>();
              for (int64_t i = 0; i < out.NumElements(); ++i) o[i] = static_cast<T>(kValue);
              return 0;
            });
          },
      .grad = [](const GradContext&) -> std::vector<GradOutput> { return {GradOutput()}; },
  };
  return op;
}

const OpDef& IndexedSlicesToDenseOp() {
  static const OpDef op = {
      .name = "IndexedSlicesToDense",
      .num_inputs = 3,
      .output_dtypes = {DTypeRule::SameAsInput(1)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kInt32, kInt64});
            c.ExpectDType(2, {kInt64});
            Shape out = Shape::Unknown();
            if (const Tensor* shape = c.input_constant(2)) {
              out = Shape(std::vector<int64_t>(shape->flat<int64_t>().begin(),
                                               shape->flat<int64_t>().end()));
            } else if (c.input_shape(1).rank_known()) {
              std::vector<int64_t> dims(c.input_shape(1).rank(), kUnknownDim);
              out = Shape(dims);
            }
            c.set_output(0, c.input_dtype(1), out);
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& indices = c.input(0);
            const Tensor& values = c.input(1);
            auto dims = c.input(2).flat<int64_t>();
            Shape shape(std::vector<int64_t>(dims.begin(), dims.end()));
            Tensor out = Tensor::Zeros(values.dtype(), shape);
            const int64_t rows = shape.dim(0);
            const int64_t n = indices.NumElements();
            const int64_t row_size = rows == 0 ? 0 : shape.num_elements() / rows;
            if (values.NumElements() != n * row_size) {
              c.Fail("values ", values.shape(), " do not hold ", n, " rows of ", row_size);
            }
            SwitchFloat(values.dtype(), "IndexedSlicesToDense", [&](auto tag) {
              using T = decltype(tag);
              T* o = out.data<T>();
              const T* v = values.data<T>();
              for (int64_t i = 0; i < n; ++i) {
                int64_t row = indices.dtype() == kInt32 ? indices.data<int32_t>()[i]
                                                        : indices.data<int64_t>()[i];
                if (row < 0 || row >= rows) c.Fail("index ", row, " is outside [0, ", rows, ")");
                T* dst = o + row * row_size;
                const T* src = v + i * row_size;
                for (int64_t j = 0; j < row_size; ++j) dst[j] += src[j];
              }
              return 0;
            });
            c.set_output(0, out);
          },
      .no_gradient = "IndexedSlicesToDense is only built by Gradients",
      .not_swept = "built by Gradients for sparse gradients only",
  };
  return op;
}

const OpDef& ZerosLikeOp() { return FillLikeOp<0>("ZerosLike"); }
const OpDef& OnesLikeOp() { return FillLikeOp<1>("OnesLike"); }

}  // namespace

Output AddN(const Scope& scope, const std::vector<Output>& inputs) {
  if (inputs.size() == 1) return inputs[0];
  return scope.AddNode(AddNOp(), inputs, {}, "AddN")->output(0);
}

Output ZerosLike(const Scope& scope, Input x) {
  return scope.AddNode(ZerosLikeOp(), {AsOutput(scope, x)}, {}, "ZerosLike")->output(0);
}

Output OnesLike(const Scope& scope, Input x) {
  return scope.AddNode(OnesLikeOp(), {AsOutput(scope, x)}, {}, "OnesLike")->output(0);
}

Output IndexedSlicesToDense(const Scope& scope, Output indices, Output values, Output dense_shape) {
  return scope
      .AddNode(IndexedSlicesToDenseOp(), {indices, values, dense_shape}, {}, "IndexedSlicesToDense")
      ->output(0);
}

void RegisterGradSupportOps(OpRegistry& registry) {
  registry.Register(AddNOp());
  registry.Register(ZerosLikeOp());
  registry.Register(OnesLikeOp());
  registry.Register(IndexedSlicesToDenseOp());
}

}  // namespace loom
