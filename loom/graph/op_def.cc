#include "loom/graph/op_def.h"

namespace loom {

const Tensor* InferenceContext::input_constant(int i) const {
  const Node* producer = node_.input(i).node;
  if (producer->op_def().role != OpRole::kConst) return nullptr;
  return &producer->attr<Tensor>("value");
}

void InferenceContext::set_output(int i, DType dtype, const Shape& shape) {
  if (static_cast<int>(dtypes_.size()) <= i) {
    dtypes_.resize(i + 1, DType::kInvalid);
    shapes_.resize(i + 1);
  }
  dtypes_[i] = dtype;
  shapes_[i] = shape;
}

void InferenceContext::ExpectDType(int i, std::initializer_list<DType> allowed) const {
  DType d = input_dtype(i);
  for (DType a : allowed)
    if (a == d) return;
  std::vector<std::string_view> names;
  for (DType a : allowed) names.push_back(DTypeName(a));
  Fail("input ", i, " (", input(i).name(), ") has dtype ", DTypeName(d), "; expected ",
       StrJoin(names, " or "));
}

void InferenceContext::ExpectSameDType(int i, int j) const {
  if (input_dtype(i) != input_dtype(j)) {
    Fail("inputs ", i, " (", input(i).name(), ", ", DTypeName(input_dtype(i)), ") and ", j,
         " (", input(j).name(), ", ", DTypeName(input_dtype(j)),
         ") must have the same dtype; insert a Cast");
  }
}

void InferenceContext::ExpectRank(int i, int rank) const {
  const Shape& s = input_shape(i);
  if (s.rank_known() && s.rank() != rank) {
    Fail("input ", i, " (", input(i).name(), ") must have rank ", rank, ", got shape ", s);
  }
}

Shape BroadcastShapes(const InferenceContext& ctx, const Shape& a, const Shape& b) {
  if (!a.rank_known() || !b.rank_known()) return Shape::Unknown();
  int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> dims(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a.dims()[ia] : 1;
    int64_t db = ib >= 0 ? b.dims()[ib] : 1;
    if (da == 1) {
      dims[i] = db;
    } else if (db == 1) {
      dims[i] = da;
    } else if (da == kUnknownDim) {
      dims[i] = db;
    } else if (db == kUnknownDim || da == db) {
      dims[i] = da;
    } else {
      ctx.Fail("shapes ", a, " and ", b, " cannot be broadcast: dimension ", i, " is ", da,
               " vs ", db);
    }
  }
  return Shape(std::move(dims));
}

Tensor KernelContext::AllocateOutput(int i, const Shape& shape) {
  Tensor t(node_.output_dtype(i), shape);
  outputs_[i] = t;
  return t;
}

Tensor KernelContext::ForwardInputOrAllocate(int in, int out, const Shape& shape) {
  Tensor& source = inputs_[in];
  if (source.BufferIsUnique() && source.buffer()->owned() &&
      source.dtype() == node_.output_dtype(out) && source.dtype() != DType::kString &&
      source.NumElements() == shape.num_elements() && source.byte_offset() == 0) {
    Tensor t = source.Reshaped(shape);
    outputs_[out] = t;
    return t;
  }
  return AllocateOutput(out, shape);
}

VariableResource& KernelContext::variable(int i) const {
  return *resources_.LookupOrCreate<VariableResource>(node_.input(i).node->name());
}

void OpRegistry::Register(const OpDef& op) { ops_[op.name] = &op; }

const OpDef* OpRegistry::Find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second;
}

const OpDef& OpRegistry::Get(const std::string& name) const {
  const OpDef* op = Find(name);
  if (op == nullptr) {
    throw NotFound("op '", name, "' is not registered; the graph was written by a newer Loom "
                   "or needs ops from a layer whose Register*Ops was not called");
  }
  return *op;
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, op] : ops_) names.push_back(name);
  return names;
}

}  // namespace loom
