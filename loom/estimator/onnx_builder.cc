#include "loom/estimator/onnx_builder.h"

#include "loom/base/check.h"
#include "loom/base/error.h"

namespace loom::onnx_export {

int OnnxDType(DType dtype) {
  switch (dtype) {
    case kFloat32:
      return onnx::TensorProto::FLOAT;
    case kFloat64:
      return onnx::TensorProto::DOUBLE;
    case kInt32:
      return onnx::TensorProto::INT32;
    case kInt64:
      return onnx::TensorProto::INT64;
    case kUInt8:
      return onnx::TensorProto::UINT8;
    case kBool:
      return onnx::TensorProto::BOOL;
    case kString:
      return onnx::TensorProto::STRING;
    default:
      throw Unimplemented("ExportOnnx: dtype ", DTypeName(dtype), " has no ONNX type");
  }
}

const std::string& OnnxBuilder::Value(const Output& output) const {
  auto it = values_.find(output.name());
  LOOM_CHECK(it != values_.end()) << "ExportOnnx: " << output.name() << " was not converted";
  return it->second;
}

std::string OnnxBuilder::NewName(const Node& node, std::string_view what) {
  std::string base = node.name() + "/onnx/" + std::string(what);
  int& n = taken_[base];
  std::string name = n == 0 ? base : base + "_" + std::to_string(n);
  ++n;
  return name;
}

onnx::NodeProto* OnnxBuilder::AddNode(const std::string& op_type,
                                      const std::vector<std::string>& inputs,
                                      const std::vector<std::string>& outputs,
                                      const std::string& domain) {
  onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(op_type);
  if (!domain.empty()) {
    n->set_domain(domain);
    if (domain == "ai.onnx.ml") uses_ml_domain_ = true;
  }
  for (const std::string& in : inputs) n->add_input(in);
  for (const std::string& out : outputs) n->add_output(out);
  // Node names are unique: the first output's name is.
  n->set_name(outputs.empty() ? op_type : outputs[0]);
  return n;
}

std::string OnnxBuilder::Op(const Node& node, const std::string& op_type,
                            const std::vector<std::string>& inputs, std::string_view what,
                            const std::function<void(onnx::NodeProto*)>& set_attrs,
                            const std::string& domain) {
  std::string out = NewName(node, what);
  onnx::NodeProto* n = AddNode(op_type, inputs, {out}, domain);
  if (set_attrs) set_attrs(n);
  return out;
}

void OnnxBuilder::Emit(const Node& node, int index, const std::string& op_type,
                       const std::vector<std::string>& inputs,
                       const std::function<void(onnx::NodeProto*)>& set_attrs,
                       const std::string& domain) {
  Output out(const_cast<Node*>(&node), index);
  onnx::NodeProto* n = AddNode(op_type, inputs, {out.name()}, domain);
  if (set_attrs) set_attrs(n);
  Bind(out, out.name());
}

std::string OnnxBuilder::Initializer(const std::string& name, const Tensor& value) {
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(OnnxDType(value.dtype()));
  for (int64_t d : value.shape().dims()) t->add_dims(d);
  if (value.dtype() == kString) {
    const std::string* s = value.data<std::string>();
    for (int64_t i = 0; i < value.NumElements(); ++i) t->add_string_data(s[i]);
  } else {
    // Little-endian element bytes; Loom's bools are one byte each, as ONNX's.
    t->set_raw_data(static_cast<const char*>(value.raw_data()), value.TotalBytes());
  }
  return name;
}

std::string OnnxBuilder::Int64s(const Node& node, std::string_view what,
                                const std::vector<int64_t>& values) {
  return Initializer(NewName(node, what), Tensor::FromVector(values));
}

std::string OnnxBuilder::Scalar(const Node& node, std::string_view what, DType dtype,
                                double value) {
  Tensor t;
  switch (dtype) {
    case kFloat32:
      t = Tensor::Scalar(static_cast<float>(value));
      break;
    case kFloat64:
      t = Tensor::Scalar(value);
      break;
    case kInt32:
      t = Tensor::Scalar(static_cast<int32_t>(value));
      break;
    case kInt64:
      t = Tensor::Scalar(static_cast<int64_t>(value));
      break;
    case kUInt8:
      t = Tensor::Scalar(static_cast<uint8_t>(value));
      break;
    case kBool:
      t = Tensor::Scalar(value != 0);
      break;
    default:
      throw Unimplemented("ExportOnnx: ", node.description(), ": no ", DTypeName(dtype),
                          " scalar constant in ONNX");
  }
  return Initializer(NewName(node, what), t);
}

namespace {
onnx::AttributeProto* NewAttr(onnx::NodeProto* node, const std::string& name,
                              onnx::AttributeProto::AttributeType type) {
  onnx::AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
}  // namespace

void SetInt(onnx::NodeProto* node, const std::string& name, int64_t value) {
  NewAttr(node, name, onnx::AttributeProto::INT)->set_i(value);
}
void SetFloat(onnx::NodeProto* node, const std::string& name, float value) {
  NewAttr(node, name, onnx::AttributeProto::FLOAT)->set_f(value);
}
void SetString(onnx::NodeProto* node, const std::string& name, const std::string& value) {
  NewAttr(node, name, onnx::AttributeProto::STRING)->set_s(value);
}
void SetInts(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = NewAttr(node, name, onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}
void SetStrings(onnx::NodeProto* node, const std::string& name,
                const std::vector<std::string>& values) {
  onnx::AttributeProto* a = NewAttr(node, name, onnx::AttributeProto::STRINGS);
  for (const std::string& v : values) a->add_strings(v);
}

}  // namespace loom::onnx_export
