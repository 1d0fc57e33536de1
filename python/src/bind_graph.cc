// DType, Graph, Node, Output, the op records (what the package generates its op functions
// from), generic node building, collections, gradients and variables.
#include <pybind11/stl.h>

#include "loom/autodiff/gradients.h"
#include "loom/estimator/all_ops.h"
#include "loom/graph/collections.h"
#include "loom/graph/graph_def.h"
#include "loom/graph/op_def.h"
#include "loom/ops/control.h"
#include "loom/ops/state.h"
#include "python/src/core.h"

namespace loom::python {

namespace {

// The kind of attribute a Python value makes, for names no record declares ('_' ones).
AttrType GuessAttrType(py::handle value) {
  if (py::isinstance<py::bool_>(value)) return AttrType::kBool;
  if (py::isinstance<py::int_>(value)) return AttrType::kInt;
  if (py::isinstance<py::float_>(value)) return AttrType::kFloat;
  if (py::isinstance<py::str>(value)) return AttrType::kString;
  if (py::isinstance<DType>(value)) return AttrType::kType;
  return AttrType::kTensor;
}

py::dict OpRecord(const OpDef& op) {
  py::dict r;
  r["name"] = op.name;
  r["num_inputs"] = op.num_inputs;
  r["ref_inputs"] = op.ref_inputs;
  r["num_outputs"] = op.num_outputs;
  r["stateful"] = op.stateful;
  r["differentiable"] = static_cast<bool>(op.grad);
  r["no_gradient"] = op.no_gradient;
  const char* roles[] = {"normal", "const", "placeholder", "variable", "switch", "merge"};
  r["role"] = roles[static_cast<int>(op.role)];
  py::list attrs;
  for (const AttrDef& a : op.attrs) {
    py::dict d;
    d["name"] = a.name;
    d["type"] = std::string(AttrTypeName(a.type));
    d["optional"] = a.optional;
    if (a.default_value) d["default"] = FromAttrValue(*a.default_value);
    py::list allowed;
    for (const AttrValue& v : a.allowed) allowed.append(FromAttrValue(v));
    d["allowed"] = allowed;
    attrs.append(d);
  }
  r["attrs"] = attrs;
  return r;
}

Node* AddNode(Graph& graph, const std::string& op_name, const std::string& name,
              const std::vector<Output>& inputs, const py::dict& py_attrs,
              const std::vector<Node*>& control_inputs) {
  const OpDef& op = AllOps().Get(op_name);
  AttrMap attrs;
  for (auto [key, value] : py_attrs) {
    std::string attr = key.cast<std::string>();
    if (value.is_none()) continue;  // absent: the record's default applies
    AttrType type = GuessAttrType(value);
    for (const AttrDef& a : op.attrs) {
      if (a.name == attr) type = a.type;
    }
    attrs.Set(attr, ToAttrValue(value, type, op_name + " '" + name + "'", attr));
  }
  return graph.AddNode(op, name, inputs, std::move(attrs), control_inputs);
}

// `with graph.outside_contexts():` adds nodes outside every cond branch (Python's
// control_dependencies(None), as TF1's also leaves the control-flow context).
struct PyOutsideContexts {
  Graph* graph;
  std::unique_ptr<Graph::ContextOverride> override;
};

// tf.cond over Python branch functions: each gets the cond's name scope and returns the
// branch's flat list of Outputs (control_flow.py packs the structure).
std::vector<Output> PyCond(Graph& graph, const std::string& prefix,
                           const std::vector<Node*>& control_deps, const std::string& name,
                           Output pred, const py::function& true_fn, const py::function& false_fn) {
  auto branch = [](const py::function& fn) {
    return [&fn](const Scope& scope) { return fn(scope.prefix()).cast<std::vector<Output>>(); };
  };
  return Cond(MakeScope(graph, prefix, control_deps), pred, branch(true_fn), branch(false_fn),
              name);
}

Collections::Kind KindFromName(const std::string& kind) {
  if (kind == "output") return Collections::Kind::kOutput;
  if (kind == "operation") return Collections::Kind::kOperation;
  if (kind == "variable") return Collections::Kind::kVariable;
  throw InvalidArgument("collection kind must be 'output', 'operation' or 'variable', got '", kind,
                        "'");
}

}  // namespace

void BindGraph(py::module_& m) {
  py::enum_<DType>(m, "DType")
      .value("float32", kFloat32)
      .value("float64", kFloat64)
      .value("int32", kInt32)
      .value("int64", kInt64)
      .value("uint8", kUInt8)
      .value("bool", kBool)
      .value("string", kString)
      .value("invalid", DType::kInvalid);
  m.def("dtype_from", &ToDType, "A DType from a DType, a numpy dtype or type, or a name");
  m.def("numpy_dtype", &NumpyDType);

  py::class_<Output>(m, "Output")
      .def_property_readonly(
          "node", [](const Output& o) { return o.node; }, py::return_value_policy::reference)
      .def_readonly("index", &Output::index)
      .def_property_readonly("dtype", &Output::dtype)
      .def_property_readonly("shape", [](const Output& o) { return FromShape(o.shape()); })
      .def_property_readonly("name", &Output::name)
      .def("__eq__", [](const Output& a, const Output& b) { return a == b; })
      .def("__hash__",
           [](const Output& o) {
             return std::hash<const void*>()(o.node) ^ static_cast<size_t>(o.index);
           })
      .def("__repr__", [](const Output& o) { return "<loom Output " + o.name() + ">"; });

  py::class_<Node, std::unique_ptr<Node, py::nodelete>>(m, "Node")
      .def_property_readonly("name", &Node::name)
      .def_property_readonly("op", &Node::op)
      .def_property_readonly("id", &Node::id)
      .def_property_readonly("num_outputs", &Node::num_outputs)
      .def_property_readonly("inputs", &Node::inputs)
      .def_property_readonly("control_inputs", &Node::control_inputs,
                             py::return_value_policy::reference)
      .def("output", &Node::output, py::arg("index") = 0)
      .def_property_readonly("description", &Node::description)
      .def_property_readonly("in_cond_branch", [](const Node& n) { return n.context() != nullptr; })
      .def_property_readonly("attrs",
                             [](const Node& n) {
                               py::dict d;
                               for (const auto& [k, v] : n.attrs().map())
                                 d[py::str(k)] = FromAttrValue(v);
                               return d;
                             })
      .def("__eq__", [](const Node& a, const Node& b) { return &a == &b; })
      .def("__hash__", [](const Node& n) { return std::hash<const void*>()(&n); });

  // Held by shared_ptr: a traced map function keeps its graph alive from C++ (bind_data.cc).
  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph")
      .def(py::init(
               [](int64_t seed) { return std::make_shared<Graph>(GraphOptions{.seed = seed}); }),
           py::arg("seed") = -1)
      .def_property("seed", &Graph::seed, &Graph::set_seed)
      .def("unique_name", &Graph::UniqueName)
      .def("add_node", &AddNode, py::arg("op"), py::arg("name"), py::arg("inputs"),
           py::arg("attrs"), py::arg("control_inputs"), py::return_value_policy::reference)
      .def("find_node", &Graph::FindNode, py::return_value_policy::reference)
      .def(
          "outside_contexts",
          [](Graph& g) {
            return PyOutsideContexts{&g, nullptr};
          },
          py::keep_alive<0, 1>())
      // tf.control_dependencies' blocks, kept by the graph so that every node added
      // (by the package or by a C++ builder) gets them (Graph::AddNode).
      .def("push_control_dependencies", &Graph::PushControlDependencies, py::arg("deps"))
      .def("pop_control_dependencies", &Graph::PopControlDependencies)
      .def("control_dependencies", &Graph::CurrentControlDependencies,
           py::return_value_policy::reference)
      .def("get_output", &Graph::GetOutput)
      .def_property_readonly("num_nodes", &Graph::num_nodes)
      .def("node", &Graph::node, py::return_value_policy::reference)
      .def("finalize", &Graph::Finalize)
      .def_property_readonly("finalized", &Graph::finalized)
      .def("variables", &Graph::Variables, py::return_value_policy::reference)
      .def("trainable_variables", &Graph::TrainableVariables, py::return_value_policy::reference)
      .def("collection_names",
           [](const Graph& g) {
             std::vector<std::string> names;
             for (const auto& [name, c] : g.collections().all()) names.push_back(name);
             return names;
           })
      // Items of the collection `name`: Outputs, Nodes (operations) or (variable Output,
      // initializer Node) pairs, by the collection's kind; [] when absent.
      .def("collection",
           [](const Graph& g, const std::string& name) {
             py::list items;
             auto it = g.collections().all().find(name);
             if (it == g.collections().all().end()) return items;
             for (const Collections::Member& mem : it->second.members) {
               switch (it->second.kind) {
                 case Collections::Kind::kOutput:
                   items.append(py::cast(Output(mem.node, mem.index)));
                   break;
                 case Collections::Kind::kOperation:
                   items.append(py::cast(mem.node, py::return_value_policy::reference));
                   break;
                 case Collections::Kind::kVariable:
                   items.append(py::make_tuple(
                       Output(mem.node, 0),
                       py::cast(mem.initializer, py::return_value_policy::reference)));
                   break;
               }
             }
             return items;
           })
      // tf.train.init_from_checkpoint: `initializer` (an op assigning `variable`) becomes
      // its initializer in every variable collection (Collections::SetInitializer).
      .def(
          "set_variable_initializer",
          [](Graph& g, Node* variable, Node* initializer) {
            g.collections().SetInitializer(variable, initializer);
          },
          py::arg("variable"), py::arg("initializer"))
      .def(
          "add_to_collection",
          [](Graph& g, const std::string& name, const std::string& kind, Node* node, int index,
             Node* initializer) {
            g.collections().AddMember(name, KindFromName(kind),
                                      {.node = node, .index = index, .initializer = initializer});
          },
          py::arg("name"), py::arg("kind"), py::arg("node"), py::arg("index") = 0,
          py::arg("initializer") = nullptr);

  py::class_<PyOutsideContexts>(m, "OutsideContexts")
      .def("__enter__",
           [](PyOutsideContexts& c) {
             c.override = std::make_unique<Graph::ContextOverride>(*c.graph, nullptr);
           })
      .def("__exit__", [](PyOutsideContexts& c, const py::args&) { c.override.reset(); });
  m.def("cond", &PyCond, py::arg("graph"), py::arg("prefix"), py::arg("control_deps"),
        py::arg("name"), py::arg("pred"), py::arg("true_fn"), py::arg("false_fn"));

  m.def("op_defs", [] {
    py::list records;
    for (const std::string& name : AllOps().Names()) records.append(OpRecord(AllOps().Get(name)));
    return records;
  });

  m.def(
      "gradients",
      [](Graph& g, const std::string& prefix, const std::vector<Output>& ys,
         const std::vector<Output>& xs, const std::vector<Output>& grad_ys) {
        std::vector<Output> grads = Gradients(MakeScope(g, prefix), ys, xs, grad_ys);
        py::list out;
        for (const Output& o : grads) {
          out.append(o.valid() ? py::cast(o) : py::object(py::none()));
        }
        return out;
      },
      py::arg("graph"), py::arg("prefix"), py::arg("ys"), py::arg("xs"),
      py::arg("grad_ys") = std::vector<Output>{});

  m.def(
      "global_variables_initializer",
      [](Graph& g, const std::string& prefix) {
        return GlobalVariablesInitializer(MakeScope(g, prefix)).node;
      },
      py::return_value_policy::reference);
  m.def(
      "local_variables_initializer",
      [](Graph& g, const std::string& prefix) {
        return LocalVariablesInitializer(MakeScope(g, prefix)).node;
      },
      py::return_value_policy::reference);
  m.def(
      "group",
      [](Graph& g, const std::string& prefix, const std::vector<Node*>& deps) {
        std::vector<Operation> ops(deps.begin(), deps.end());
        return Group(MakeScope(g, prefix), ops).node;
      },
      py::return_value_policy::reference);
}

}  // namespace loom::python
