#ifndef LOOM_ESTIMATOR_TF_GRAPH_TEST_UTIL_H_
#define LOOM_ESTIMATOR_TF_GRAPH_TEST_UTIL_H_

// Test helper: a TF GraphDef built node by node and written to a file for
// TfModel::LoadFrozenGraph (tf_saved_model_test.cc, tf_graph_damage_test.cc). Header-only.
#include <cstdint>
#include <string>
#include <vector>

#include "loom/base/env.h"
#include "loom/io/proto/graph.pb.h"
#include "loom/testing/temp_dir.h"

namespace loom::tf_testing {

// Appends a node `name` running `op` on `inputs` ("node", "node:1", "^control") to `def`.
inline proto::NodeDef* AddNode(proto::GraphDef& def, const std::string& name, const std::string& op,
                               const std::vector<std::string>& inputs = {}) {
  proto::NodeDef* n = def.add_node();
  n->set_name(name);
  n->set_op(op);
  for (const auto& i : inputs) n->add_input(i);
  return n;
}

// Writes `def` serialized to `path`; returns `path`.
inline std::string WriteGraphDef(const proto::GraphDef& def, const std::string& path) {
  auto f = Env::Default()->NewWritableFile(path);
  f->Append(def.SerializeAsString());
  f->Close();
  return path;
}

// A GraphDef under construction, with the attribute and constant forms the tests use.
class GraphBuilder {
 public:
  proto::NodeDef* Add(const std::string& name, const std::string& op,
                      const std::vector<std::string>& inputs = {}) {
    return AddNode(def_, name, op, inputs);
  }
  void Placeholder(const std::string& name, proto::DataType dtype) {
    (*Add(name, "Placeholder")->mutable_attr())["dtype"].set_type(dtype);
  }
  void Floats(const std::string& name, const std::vector<float>& v,
              const std::vector<int64_t>& shape) {
    proto::TensorProto* t = Const(name, proto::DT_FLOAT, shape);
    for (float x : v) t->add_float_val(x);
  }
  void Ints(const std::string& name, const std::vector<int32_t>& v,
            const std::vector<int64_t>& shape) {
    proto::TensorProto* t = Const(name, proto::DT_INT32, shape);
    for (int32_t x : v) t->add_int_val(x);
  }
  void String(const std::string& name, const std::string& value) {
    Const(name, proto::DT_STRING, {})->add_string_val(value);
  }
  static void SetInts(proto::NodeDef* n, const std::string& attr, const std::vector<int64_t>& v) {
    auto* list = (*n->mutable_attr())[attr].mutable_list();
    for (int64_t x : v) list->add_i(x);
  }
  proto::GraphDef& def() { return def_; }
  // Writes the graph as `dir`/graph.pb; returns its path.
  std::string Write(const testing::TempDir& dir) const {
    return WriteGraphDef(def_, dir.Join("graph.pb"));
  }

 private:
  proto::TensorProto* Const(const std::string& name, proto::DataType dtype,
                            const std::vector<int64_t>& shape) {
    proto::NodeDef* n = Add(name, "Const");
    (*n->mutable_attr())["dtype"].set_type(dtype);
    proto::TensorProto* t = (*n->mutable_attr())["value"].mutable_tensor();
    t->set_dtype(dtype);
    for (int64_t d : shape) t->mutable_tensor_shape()->add_dim()->set_size(d);
    return t;
  }
  proto::GraphDef def_;
};

}  // namespace loom::tf_testing

#endif  // LOOM_ESTIMATOR_TF_GRAPH_TEST_UTIL_H_
