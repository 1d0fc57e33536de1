#include "loom/graph/scope.h"

#include <algorithm>

#include "loom/graph/op_def.h"

namespace loom {

Scope Scope::NewSubScope(std::string_view name) const {
  Scope s = *this;
  s.prefix_ = graph_->UniqueName(FullName(name));
  s.op_name_.clear();
  return s;
}

Scope Scope::WithOpName(std::string_view name) const {
  Scope s = *this;
  s.op_name_ = std::string(name);
  return s;
}

Scope Scope::WithPrefix(std::string_view prefix) const {
  Scope s = *this;
  s.prefix_ = std::string(prefix);
  s.op_name_.clear();
  return s;
}

Scope Scope::WithControlDependencies(const std::vector<Operation>& deps) const {
  Scope s = *this;
  for (const Operation& d : deps) {
    if (d.valid() && std::find(s.control_deps_.begin(), s.control_deps_.end(), d.node) ==
                         s.control_deps_.end()) {
      s.control_deps_.push_back(d.node);
    }
  }
  return s;
}

Scope Scope::WithNoControlDependencies() const {
  Scope s = *this;
  s.control_deps_.clear();
  return s;
}

std::string Scope::FullName(std::string_view name) const {
  return prefix_.empty() ? std::string(name) : StrCat(prefix_, "/", name);
}

Node* Scope::AddNode(const OpDef& op, std::vector<Output> inputs, AttrMap attrs,
                     std::string_view default_name) const {
  std::string_view base = !op_name_.empty()       ? std::string_view(op_name_)
                          : !default_name.empty() ? default_name
                                                  : std::string_view(op.name);
  std::string name = graph_->UniqueName(FullName(base));
  return graph_->AddNode(op, name, std::move(inputs), std::move(attrs), control_deps_);
}

namespace {
constexpr const char* kEmptyInputMessage =
    "an empty Output (one that names no tensor) was passed where an op needs a tensor: in a "
    "model_fn this is usually the labels when the input_fn returned none, or a feature that "
    "was never set";
}  // namespace

Input::Input(std::initializer_list<float> values)
    : literal_(Tensor::FromVector(std::vector<float>(values))), has_literal_(true) {}

Tensor Input::ToTensor(DType hint) const {
  if (has_literal_) {
    if (hint == DType::kInvalid || hint == literal_.dtype()) return literal_;
    throw InvalidArgument("a ", DTypeName(literal_.dtype()), " constant ",
                          literal_.shape().ToString(), " is used where ", DTypeName(hint),
                          " is expected; Cast it or build it with that dtype");
  }
  LOOM_CHECK(!is_output()) << "Input::ToTensor on an Output";
  if (!is_number_) throw InvalidArgument(kEmptyInputMessage);
  DType dtype = hint != DType::kInvalid ? hint : (is_integer_ ? kInt32 : kFloat32);
  if (!is_integer_ && IsInteger(dtype) &&
      number_ != static_cast<double>(static_cast<int64_t>(number_))) {
    throw InvalidArgument("the literal ", number_, " cannot be used as ", DTypeName(dtype),
                          " without losing its fraction");
  }
  return SwitchAll(dtype, "literal constant", [&](auto tag) -> Tensor {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, std::string>) {
      throw InvalidArgument("a number cannot be a string constant");
    } else {
      return Tensor::Scalar<T>(static_cast<T>(number_));
    }
  });
}

Output AsOutput(const Scope& scope, const Input& input, DType hint) {
  if (input.is_output()) return input.output();
  if (input.empty()) {
    throw InvalidArgument(
        kEmptyInputMessage,
        scope.prefix().empty() ? "" : StrCat(" (under name scope '", scope.prefix(), "')"));
  }
  // The literal's Const must not take the name meant for the op being built.
  return Const(scope.WithOpName(""), input.ToTensor(hint));
}

std::pair<Output, Output> AsOutputs(const Scope& scope, const Input& a, const Input& b) {
  if (a.is_output()) return {a.output(), AsOutput(scope, b, a.output().dtype())};
  if (b.is_output()) return {AsOutput(scope, a, b.output().dtype()), b.output()};
  Output oa = AsOutput(scope, a);
  return {oa, AsOutput(scope, b, oa.dtype())};
}

namespace {
inline constexpr Attr<DType> kDType{"dtype"};
}  // namespace

const OpDef& ConstOp() {
  static const OpDef op = {
      .name = "Const",
      .num_inputs = 0,
      .role = OpRole::kConst,
      // "dtype" repeats the value's dtype for TF's readers.
      .attrs = {kConstValue.Required(), kDType.Optional()},
      .output_dtypes = {DTypeRule::FromTensorAttr(kConstValue)},
      .shape =
          [](InferenceContext& c) {
            const Tensor& v = c.attr(kConstValue);
            if (const DType* d = c.find_attr(kDType); d != nullptr && *d != v.dtype()) {
              c.Fail("attribute 'dtype' is ", DTypeName(*d), " but the value is ",
                     DTypeName(v.dtype()));
            }
            c.set_output(0, v.dtype(), v.shape());
          },
      .kernel = [](KernelContext& c) { c.set_output(0, c.attr(kConstValue)); },
      .no_gradient = "constants have no inputs",
      .sample =
          [] {
            return OpSample{{}, {kConstValue(SampleDoubles({2}))}};
          },
  };
  return op;
}

Output Const(const Scope& scope, const Tensor& value) {
  LOOM_CHECK(value.defined()) << "Const of an undefined tensor";
  return scope.AddNode(ConstOp(), {}, {kConstValue(value), kDType(value.dtype())}, "Const")
      ->output(0);
}

}  // namespace loom
