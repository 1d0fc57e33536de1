#include "loom/graph/op_def.h"

#include <algorithm>
#include <optional>

#include "loom/base/check.h"

namespace loom {

const Tensor* InferenceContext::input_constant(int i) const {
  const Node* producer = node_.input(i).node;
  if (producer->op_def().role != OpRole::kConst) return nullptr;
  return &producer->attr(kConstValue);
}

void InferenceContext::set_output(int i, DType dtype, const Shape& shape) {
  if (static_cast<int>(dtypes_.size()) <= i) {
    dtypes_.resize(i + 1, DType::kInvalid);
    shapes_.resize(i + 1);
  }
  dtypes_[i] = dtype;
  shapes_[i] = shape;
}

DType InferenceContext::output_dtype(int i) const {
  const DTypeRule* rule = OutputDTypeRule(node_.op_def(), i);
  return rule == nullptr ? DType::kInvalid : rule->Resolve(node_, i);
}

void InferenceContext::set_output_shape(int i, const Shape& shape) {
  const DType dtype = output_dtype(i);
  LOOM_CHECK(dtype != DType::kInvalid)
      << node_.description() << ": set_output_shape(" << i
      << ") but the record's dtype rule does not decide that output's dtype";
  set_output(i, dtype, shape);
}

const DTypeRule* OutputDTypeRule(const OpDef& op, int i) {
  if (op.output_dtypes.empty()) return nullptr;
  if (op.num_outputs == kVariadic) return &op.output_dtypes[0];
  return i < static_cast<int>(op.output_dtypes.size()) ? &op.output_dtypes[i] : nullptr;
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
    Fail("inputs ", i, " (", input(i).name(), ", ", DTypeName(input_dtype(i)), ") and ", j, " (",
         input(j).name(), ", ", DTypeName(input_dtype(j)),
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
      ctx.Fail("shapes ", a, " and ", b, " cannot be broadcast: dimension ", i, " is ", da, " vs ",
               db);
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

void ValidateOpDef(const OpDef& op) {
  auto fail = [&](const auto&... args) {
    throw InvalidArgument("op record '", op.name, "': ", args...);
  };
  if (op.name.empty()) fail("has no name");
  if (!op.kernel) fail("has no kernel");
  if (!op.grad && op.no_gradient.empty()) {
    fail("has neither a gradient nor a no_gradient reason; say why it has none");
  }
  if (op.num_inputs < 0 && op.num_inputs != kVariadic) fail("num_inputs is ", op.num_inputs);
  if (op.num_outputs < 0 && op.num_outputs != kVariadic) fail("num_outputs is ", op.num_outputs);
  for (int r : op.ref_inputs) {
    if (r < 0 || (op.num_inputs != kVariadic && r >= op.num_inputs)) {
      fail("ref input ", r, " is not one of its ", op.num_inputs, " inputs");
    }
  }
  if (op.num_outputs != 0 && op.output_dtypes.empty()) {
    fail(
        "declares no output dtype rules; say how each output's dtype follows in "
        ".output_dtypes (DTypeRule::SameAsInput(0), Fixed(kInt64), FromAttr(kDType), ...)");
  }
  if (op.num_outputs == kVariadic && op.output_dtypes.size() > 1) {
    fail("has variadic outputs and ", op.output_dtypes.size(),
         " output dtype rules; a variadic op declares one rule for every output");
  }
  if (op.num_outputs > 0 && static_cast<int>(op.output_dtypes.size()) != op.num_outputs) {
    fail("has ", op.num_outputs, " outputs and ", op.output_dtypes.size(),
         " output dtype rules; declare one per output");
  }
  for (size_t i = 0; i < op.output_dtypes.size(); ++i) {
    const DTypeRule& rule = op.output_dtypes[i];
    using Kind = DTypeRule::Kind;
    auto attr_type = [&](const std::string& name) -> std::optional<AttrType> {
      for (const AttrDef& a : op.attrs)
        if (a.name == name) return a.type;
      return std::nullopt;
    };
    if (rule.kind() == Kind::kSameAsInput &&
        (rule.input() < 0 || (op.num_inputs != kVariadic && rule.input() >= op.num_inputs))) {
      fail("output ", i, "'s dtype rule (", rule.ToString(), ") names an input the op, with ",
           op.num_inputs, " inputs, does not have");
    }
    if (rule.kind() == Kind::kFixed && rule.dtype() == DType::kInvalid) {
      fail("output ", i, "'s dtype rule fixes an invalid dtype");
    }
    if (rule.kind() == Kind::kByShapeRule && rule.how().empty()) {
      fail("output ", i, "'s dtype rule is ByShapeRule without saying how");
    }
    const std::pair<Kind, AttrType> attr_kinds[] = {{Kind::kFromAttr, AttrType::kType},
                                                    {Kind::kFromAttrList, AttrType::kTypeList},
                                                    {Kind::kFromTensorAttr, AttrType::kTensor}};
    for (const auto& [kind, type] : attr_kinds) {
      if (rule.kind() != kind) continue;
      if (attr_type(rule.attr()) != type) {
        fail("output ", i, "'s dtype rule (", rule.ToString(), ") needs a declared ",
             AttrTypeName(type), " attribute '", rule.attr(), "'");
      }
    }
  }
  if (op.sample && !op.not_swept.empty()) {
    fail("has both a sweep sample and a not_swept reason (", op.not_swept, "); keep one");
  }
  for (size_t i = 0; i < op.attrs.size(); ++i) {
    const AttrDef& a = op.attrs[i];
    if (a.name.empty() || a.name[0] == '_') {
      fail("attribute '", a.name, "': declared names are not empty and do not start with '_'");
    }
    for (size_t j = 0; j < i; ++j) {
      if (op.attrs[j].name == a.name) fail("attribute '", a.name, "' is declared twice");
    }
    if (a.type == AttrType::kHostObject && !a.optional) {
      fail("attribute '", a.name,
           "': a host object is not serialized, so it is Optional() "
           "(a loaded graph lacks it and the kernel says so)");
    }
    for (const AttrValue& v : a.allowed) {
      if (AttrTypeOf(v) != a.type) {
        fail("attribute '", a.name, "' (", AttrTypeName(a.type), ") allows ", AttrValueToString(v),
             " of kind ", AttrTypeName(AttrTypeOf(v)));
      }
    }
    if (a.default_value) {
      if (AttrTypeOf(*a.default_value) != a.type) {
        fail("attribute '", a.name, "' (", AttrTypeName(a.type), ") has a default of kind ",
             AttrTypeName(AttrTypeOf(*a.default_value)));
      }
      if (a.optional) fail("attribute '", a.name, "' is optional and has a default; pick one");
      if (!a.allowed.empty() &&
          std::none_of(a.allowed.begin(), a.allowed.end(),
                       [&](const AttrValue& v) { return AttrValueEquals(v, *a.default_value); })) {
        fail("attribute '", a.name, "': the default ", AttrValueToString(*a.default_value),
             " is not among the allowed values");
      }
    }
  }
}

namespace {

std::string DeclaredNames(const OpDef& op) {
  if (op.attrs.empty()) return StrCat(op.name, " takes no attributes");
  std::vector<std::string_view> names;
  for (const AttrDef& a : op.attrs) names.push_back(a.name);
  return StrCat(op.name, " declares ", StrJoin(names, ", "));
}

bool IsEmptyList(const AttrValue& v) {
  const auto* ints = std::get_if<std::vector<int64_t>>(&v);
  return ints != nullptr && ints->empty();
}

AttrValue EmptyListOf(AttrType type) {
  switch (type) {
    case AttrType::kFloatList:
      return std::vector<double>();
    case AttrType::kStringList:
      return std::vector<std::string>();
    case AttrType::kTypeList:
      return std::vector<DType>();
    case AttrType::kShapeList:
      return std::vector<Shape>();
    default:
      return std::vector<int64_t>();
  }
}

}  // namespace

void CheckNodeAttrs(const OpDef& op, const std::string& name, AttrMap& attrs) {
  auto fail = [&](const auto&... args) {
    throw InvalidArgument(op.name, " '", name, "': ", args...);
  };
  for (const auto& [key, value] : attrs.map()) {
    if (!key.empty() && key[0] == '_') continue;
    const AttrDef* def = nullptr;
    for (const AttrDef& a : op.attrs) {
      if (a.name == key) def = &a;
    }
    if (def == nullptr) fail("unknown attribute '", key, "'; ", DeclaredNames(op));
    if (AttrTypeOf(value) != def->type && !(IsEmptyList(value) && def->type >= AttrType::kIntList &&
                                            def->type <= AttrType::kShapeList)) {
      fail("attribute '", key, "' is declared ", AttrTypeName(def->type), ", got ",
           AttrTypeName(AttrTypeOf(value)), " ", AttrValueToString(value));
    }
    if (!def->allowed.empty() &&
        std::none_of(def->allowed.begin(), def->allowed.end(),
                     [&given = value](const AttrValue& v) { return AttrValueEquals(v, given); })) {
      std::vector<std::string> allowed;
      for (const AttrValue& v : def->allowed) allowed.push_back(AttrValueToString(v));
      fail("attribute '", key, "' is ", AttrValueToString(value),
           "; allowed: ", StrJoin(allowed, ", "));
    }
  }
  for (const AttrDef& a : op.attrs) {
    if (auto found = attrs.map().find(a.name); found != attrs.map().end()) {
      if (AttrTypeOf(found->second) != a.type) attrs.Set(a.name, EmptyListOf(a.type));
      continue;
    }
    if (a.default_value) {
      attrs.Set(a.name, *a.default_value);
    } else if (!a.optional) {
      fail("missing attribute '", a.name, "' (", AttrTypeName(a.type), ")");
    }
  }
}

void OpRegistry::Register(const OpDef& op) {
  ValidateOpDef(op);
  auto [it, inserted] = ops_.emplace(op.name, &op);
  if (!inserted && it->second != &op) {
    throw InvalidArgument("op record '", op.name, "' is registered twice, by two records; ",
                          "op names are unique");
  }
}

const OpDef* OpRegistry::Find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second;
}

const OpDef& OpRegistry::Get(const std::string& name) const {
  const OpDef* op = Find(name);
  if (op == nullptr) {
    throw NotFound("op '", name,
                   "' is not registered; the graph was written by a newer Loom "
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
