#ifndef LOOM_ESTIMATOR_ONNX_BUILDER_H_
#define LOOM_ESTIMATOR_ONNX_BUILDER_H_

// Internal to the ONNX export (onnx_export.h): the GraphProto under construction and the
// per-op rules that map one Loom node to ONNX nodes. Not part of the public API.
//
// Value names: the ONNX value of a Loom output is named like the Loom tensor ("dense/MatMul:0");
// values the rules add are named "<node>/onnx/<what>", unique per model. Graph inputs and
// outputs are named by signature key (they hold no ':' unless the key does; collisions are
// an error raised by the exporter).
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "loom/graph/graph.h"
#include "loom/io/proto/onnx.pb.h"

namespace loom::onnx_export {

// ONNX's TensorProto.DataType of a Loom dtype; Unimplemented for none.
int OnnxDType(DType dtype);

class OnnxBuilder {
 public:
  explicit OnnxBuilder(onnx::GraphProto* graph) : graph_(graph) {}

  // The ONNX value holding `output`. REQUIRES: bound (its producer was converted).
  const std::string& Value(const Output& output) const;
  // Input i of `node` as an ONNX value.
  const std::string& In(const Node& node, int i) const { return Value(node.input(i)); }
  void Bind(const Output& output, std::string value) { values_[output.name()] = std::move(value); }
  bool Bound(const Output& output) const { return values_.count(output.name()) > 0; }

  // A fresh value name "<node>/onnx/<what>" (suffixed _1, _2, ... when taken).
  std::string NewName(const Node& node, std::string_view what);

  // Adds a node of `op_type` (domain "" unless given) and returns it for attributes.
  onnx::NodeProto* AddNode(const std::string& op_type, const std::vector<std::string>& inputs,
                           const std::vector<std::string>& outputs, const std::string& domain = "");
  // A one-output node whose output is a fresh value of `node`; returns that value.
  std::string Op(const Node& node, const std::string& op_type,
                 const std::vector<std::string>& inputs, std::string_view what,
                 const std::function<void(onnx::NodeProto*)>& set_attrs = nullptr,
                 const std::string& domain = "");
  // Same, writing the node's output `index` (binds it).
  void Emit(const Node& node, int index, const std::string& op_type,
            const std::vector<std::string>& inputs,
            const std::function<void(onnx::NodeProto*)>& set_attrs = nullptr,
            const std::string& domain = "");

  // An initializer holding `value`, named `name`; returns the name.
  std::string Initializer(const std::string& name, const Tensor& value);
  // Constant initializers for the rules: an int64 vector, or a scalar of `dtype`.
  std::string Int64s(const Node& node, std::string_view what, const std::vector<int64_t>& values);
  std::string Scalar(const Node& node, std::string_view what, DType dtype, double value);

  // The domains the nodes used (for opset_import).
  bool uses_ml_domain() const { return uses_ml_domain_; }
  onnx::GraphProto* graph() { return graph_; }

 private:
  onnx::GraphProto* graph_;
  std::map<std::string, std::string> values_;  // Loom tensor name -> ONNX value name
  std::map<std::string, int> taken_;
  bool uses_ml_domain_ = false;
};

// Attribute setters.
void SetInt(onnx::NodeProto* node, const std::string& name, int64_t value);
void SetFloat(onnx::NodeProto* node, const std::string& name, float value);
void SetString(onnx::NodeProto* node, const std::string& name, const std::string& value);
void SetInts(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values);
void SetStrings(onnx::NodeProto* node, const std::string& name,
                const std::vector<std::string>& values);

// How one Loom op maps. `unsupported` (optional) returns why this particular node cannot
// be exported ("" when it can), e.g. a vocabulary lookup with hashed out-of-vocabulary
// buckets; `convert` adds the ONNX nodes and binds every output of the node.
struct OpRule {
  std::function<std::string(const Node&)> unsupported;
  std::function<void(OnnxBuilder&, const Node&)> convert;
};

// Every op that maps, by Loom op name (onnx_ops.cc).
const std::map<std::string, OpRule>& OpRules();
// Why an op has no rule, for ops known not to map (hashing, randomness, input pipelines,
// training ops); "" for others.
std::string WhyNotMapped(const std::string& op);

}  // namespace loom::onnx_export

#endif  // LOOM_ESTIMATOR_ONNX_BUILDER_H_
