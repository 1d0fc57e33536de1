// Unique (unique.h).
#include "loom/ops/unique.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "loom/ops/array_internal.h"
#include "loom/ops/attr_keys.h"

namespace loom {

using array_internal::Raw;

namespace {

inline constexpr Attr<DType> kOutIdx{"out_idx"};

template <typename T>
void UniqueKernel(KernelContext& c, const Tensor& x) {
  const int64_t n = x.NumElements();
  const T* in = x.data<T>();
  std::unordered_map<T, int64_t> seen;
  std::vector<int64_t> positions(n);
  std::vector<int64_t> firsts;
  for (int64_t i = 0; i < n; ++i) {
    auto [it, added] = seen.emplace(in[i], static_cast<int64_t>(firsts.size()));
    if (added) firsts.push_back(i);
    positions[i] = it->second;
  }
  Tensor y = c.AllocateOutput(0, Shape({static_cast<int64_t>(firsts.size())}));
  T* out = y.data<T>();
  for (size_t j = 0; j < firsts.size(); ++j) out[j] = in[firsts[j]];
  Tensor idx = c.AllocateOutput(1, x.shape());
  if (idx.dtype() == kInt32) {
    for (int64_t i = 0; i < n; ++i) Raw<int32_t>(idx)[i] = static_cast<int32_t>(positions[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) Raw<int64_t>(idx)[i] = positions[i];
  }
  c.set_output(0, std::move(y));
  c.set_output(1, std::move(idx));
}

const OpDef& UniqueOp() {
  static const OpDef op = {
      .name = "Unique",
      .num_inputs = 1,
      .attrs = {kOutIdx.Default(kInt32)},
      .num_outputs = 2,
      .output_dtypes = {DTypeRule::SameAsInput(0), DTypeRule::FromAttr(kOutIdx)},
      .shape =
          [](InferenceContext& c) {
            c.ExpectDType(0, {kFloat32, kFloat64, kInt32, kInt64, kUInt8, kString});
            c.ExpectRank(0, 1);
            const DType out_idx = c.attr(kOutIdx);
            if (out_idx != kInt32 && out_idx != kInt64) {
              c.Fail("out_idx must be int32 or int64, got ", DTypeName(out_idx));
            }
            c.set_output(0, c.input_dtype(0), Shape({kUnknownDim}));
            c.set_output(1, out_idx, c.input_shape(0));
          },
      .kernel =
          [](KernelContext& c) {
            const Tensor& x = c.input(0);
            if (x.rank() != 1) c.Fail("x must be a vector, got shape ", x.shape());
            if (x.dtype() == kString) return UniqueKernel<std::string>(c, x);
            SwitchNumeric(x.dtype(), "Unique",
                          [&](auto tag) { UniqueKernel<decltype(tag)>(c, x); });
          },
      .no_gradient = "Unique selects distinct values (TF has no gradient for it either)",
      .sample =
          [] {
            return OpSample{{Tensor::FromVector<double>({1.5, 2.5, 1.5})}, {}, false};
          },
  };
  return op;
}

}  // namespace

UniqueResult Unique(const Scope& scope, Input x, DType out_idx) {
  Node* node = scope.AddNode(UniqueOp(), {AsOutput(scope, x)}, {kOutIdx(out_idx)}, "Unique");
  return {node->output(0), node->output(1)};
}

void RegisterUniqueOps(OpRegistry& registry) { registry.Register(UniqueOp()); }

}  // namespace loom
