#ifndef LOOM_ESTIMATOR_TF_OPS_INTERNAL_H_
#define LOOM_ESTIMATOR_TF_OPS_INTERNAL_H_

// Internal to the TF op rules (tf_ops.h): what a rule sees, shared by tf_ops.cc (control
// flow, variables, math, nn, the first array rules), tf_ops_array.cc (selection, more
// array ops) and tf_ops_nn.cc (the convolutions beyond Conv2D).
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "loom/estimator/tf_ops.h"
#include "loom/io/proto/attr_value.pb.h"

namespace loom::tf_import {

// What a translation rule sees: the TF node, its inputs already translated, a scope whose
// next node takes the TF node's name, and a scope for helper nodes.
struct OpContext {
  const proto::NodeDef& node;
  std::vector<Output> in;
  Scope named;
  Scope helper;
  const TfCheckpointReader* variables;
  const std::string& source;

  const proto::AttrValue& Attr(const std::string& name) const {
    auto it = node.attr().find(name);
    if (it == node.attr().end()) {
      throw InvalidArgument(source, ": TF node '", node.name(), "' (", node.op(),
                            ") lacks its attribute '", name, "'");
    }
    return it->second;
  }
  bool AttrB(const std::string& name, bool fallback) const {
    auto it = node.attr().find(name);
    return it == node.attr().end() ? fallback : it->second.b();
  }
  std::string AttrS(const std::string& name, const std::string& fallback) const {
    auto it = node.attr().find(name);
    return it == node.attr().end() ? fallback : it->second.s();
  }
  std::vector<int64_t> AttrInts(const std::string& name) const {
    const auto& list = Attr(name).list().i();
    return {list.begin(), list.end()};
  }
  Output In(size_t i) const {
    if (i >= in.size()) {
      throw InvalidArgument(source, ": TF node '", node.name(), "' (", node.op(), ") has ",
                            in.size(), " inputs, needs at least ", i + 1);
    }
    return in[i];
  }
  // The values of input i, which must be a constant (axes, shapes, slice bounds).
  std::vector<int64_t> ConstInts(size_t i) const {
    Output x = In(i);
    if (x.node->op_def().role != OpRole::kConst) {
      throw Unimplemented(source, ": TF node '", node.name(), "' (", node.op(), "): input ", i,
                          " must be a constant for Loom (it is computed by '", x.node->name(),
                          "')");
    }
    const Tensor& t = x.node->attr(kConstValue);
    std::vector<int64_t> out;
    if (t.dtype() == kInt32) {
      for (int32_t v : t.flat<int32_t>()) out.push_back(v);
    } else if (t.dtype() == kInt64) {
      for (int64_t v : t.flat<int64_t>()) out.push_back(v);
    } else {
      throw InvalidArgument(source, ": TF node '", node.name(), "': input ", i,
                            " must be int32 or int64, is ", DTypeName(t.dtype()));
    }
    return out;
  }
  // Fails unless the node's optional "dilations" attribute is all ones.
  void RequireNoDilations() const {
    auto it = node.attr().find("dilations");
    if (it == node.attr().end()) return;
    for (int64_t d : it->second.list().i()) {
      if (d != 1) throw Unimplemented(source, ": ", node.op(), " '", node.name(), "' is dilated");
    }
  }
  void RequireNhwc() const {
    if (AttrS("data_format", "NHWC") != "NHWC") {
      throw Unimplemented(source, ": TF node '", node.name(), "' (", node.op(),
                          ") uses data_format ", AttrS("data_format", ""), "; Loom runs NHWC only");
    }
  }
};

using TfOp = std::function<Output(OpContext&)>;

inline Output Binary(OpContext& c, Output (*op)(const Scope&, Input, Input)) {
  return op(c.named, c.In(0), c.In(1));
}
inline Output Unary(OpContext& c, Output (*op)(const Scope&, Input)) {
  return op(c.named, c.In(0));
}

// Adds tf_ops_array.cc's rules to `table`.
void AddArrayRules(std::map<std::string, TfOp>& table);
// Adds tf_ops_nn.cc's rules (the convolutions beyond Conv2D) to `table`.
void AddNnRules(std::map<std::string, TfOp>& table);

}  // namespace loom::tf_import

#endif  // LOOM_ESTIMATOR_TF_OPS_INTERNAL_H_
