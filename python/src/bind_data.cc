// Datasets and their graph iterators. A map or filter function is traced once by the
// package into a graph of its own (placeholders for the element's components in, the
// results out); here it becomes a C++ MapFn that runs that graph in a Session per element,
// so no Python code runs per element and the GIL is never taken in the pipeline.
#include <pybind11/stl.h>

#include "loom/data/dataset.h"
#include "loom/data/file_sources.h"
#include "loom/runtime/session.h"
#include "python/src/core.h"

namespace loom::python {

namespace {

using data::Dataset;
using data::Element;

// A traced function: its graph (shared with the Python Graph that built it), a Session
// over it, and which placeholder each input component feeds and which output each result
// component is. Shared by every copy of the MapFn; Session::Run is thread-safe, so
// parallel map calls share it.
struct TracedFunction {
  std::shared_ptr<Graph> graph;
  std::unique_ptr<Session> session;
  std::vector<std::pair<std::string, Output>> inputs;
  std::vector<std::string> output_names;
  std::vector<Output> outputs;

  std::vector<Tensor> Run(const Element& element) const {
    FeedList feeds;
    feeds.reserve(inputs.size());
    for (const auto& [name, placeholder] : inputs) {
      auto it = element.find(name);
      if (it == element.end()) {
        throw InvalidArgument("the traced map function reads component '", name,
                              "', which the element lacks");
      }
      feeds.emplace_back(placeholder, it->second);
    }
    return session->Run(feeds, outputs);
  }
};

std::shared_ptr<TracedFunction> MakeTraced(std::shared_ptr<Graph> graph,
                                           const std::map<std::string, Output>& inputs,
                                           const std::map<std::string, Output>& outputs,
                                           int intra_op_threads) {
  auto f = std::make_shared<TracedFunction>();
  f->graph = std::move(graph);
  // One thread per call: elements are the parallelism (num_parallel_calls).
  f->session =
      std::make_unique<Session>(*f->graph, SessionOptions{.intra_op_threads = intra_op_threads});
  for (const auto& [name, out] : inputs) f->inputs.emplace_back(name, out);
  for (const auto& [name, out] : outputs) {
    f->output_names.push_back(name);
    f->outputs.push_back(out);
  }
  return f;
}

data::ElementSpec SpecFromPython(const py::dict& spec) {
  data::ElementSpec out;
  for (auto [name, value] : spec) {
    auto t = value.cast<py::tuple>();
    out[name.cast<std::string>()] = {ToDType(t[0]), ToShape(t[1])};
  }
  return out;
}

py::dict SpecToPython(const data::ElementSpec& spec) {
  py::dict out;
  for (const auto& [name, s] : spec)
    out[py::str(name)] = py::make_tuple(s.dtype, FromShape(s.shape));
  return out;
}

py::dict OutputsToPython(const std::map<std::string, Output>& outputs) {
  py::dict d;
  for (const auto& [name, out] : outputs) d[py::str(name)] = out;
  return d;
}

}  // namespace

void BindData(py::module_& m) {
  py::class_<Dataset>(m, "Dataset")
      .def_property_readonly("spec", [](const Dataset& d) { return SpecToPython(d.spec()); })
      .def("debug_string", &Dataset::DebugString)
      .def("batch", [](const Dataset& d, int64_t n,
                       bool drop) { return d.Batch(n, {.drop_remainder = drop}); })
      .def("shuffle",
           [](const Dataset& d, int64_t buffer, std::optional<uint64_t> seed, bool reshuffle) {
             return d.Shuffle(buffer, {.seed = seed, .reshuffle_each_iteration = reshuffle});
           })
      .def("repeat", &Dataset::Repeat)
      .def("take", &Dataset::Take)
      .def("skip", &Dataset::Skip)
      .def("shard", &Dataset::Shard)
      .def("prefetch", &Dataset::Prefetch)
      .def("unbatch", &Dataset::Unbatch)
      .def("cache", [](const Dataset& d, const std::string& filename) { return d.Cache(filename); })
      .def("concatenate", &Dataset::Concatenate)
      // The same elements with components renamed (old name -> new name; the tensors are
      // moved, not copied). The package names every component by its path in the
      // element's structure, whatever the C++ source calls it.
      .def("rename",
           [](const Dataset& d, const std::map<std::string, std::string>& names) {
             data::ElementSpec spec;
             for (const auto& [name, s] : d.spec()) {
               auto it = names.find(name);
               spec[it == names.end() ? name : it->second] = s;
             }
             return d.Map(
                 [names](Element element) {
                   Element out;
                   for (auto& [name, t] : element) {
                     auto it = names.find(name);
                     out[it == names.end() ? name : it->second] = std::move(t);
                   }
                   return out;
                 },
                 {.output_spec = spec});
           })
      // map(graph, inputs {component: placeholder}, outputs {component: tensor},
      // num_parallel_calls): the traced function run per element in C++.
      .def("map_traced",
           [](const Dataset& d, std::shared_ptr<Graph> graph,
              const std::map<std::string, Output>& inputs,
              const std::map<std::string, Output>& outputs, int num_parallel_calls,
              bool deterministic) {
             auto f = MakeTraced(std::move(graph), inputs, outputs, 1);
             data::ElementSpec spec;
             for (const auto& [name, out] : outputs) spec[name] = {out.dtype(), out.shape()};
             return d.Map(
                 [f](Element element) {
                   std::vector<Tensor> values = f->Run(element);
                   Element result;
                   for (size_t i = 0; i < values.size(); ++i) {
                     result[f->output_names[i]] = std::move(values[i]);
                   }
                   return result;
                 },
                 {.num_parallel_calls = num_parallel_calls,
                  .deterministic = deterministic,
                  .output_spec = spec});
           })
      .def("filter_traced",
           [](const Dataset& d, std::shared_ptr<Graph> graph,
              const std::map<std::string, Output>& inputs, Output predicate) {
             auto f = MakeTraced(std::move(graph), inputs, {{"predicate", predicate}}, 1);
             return d.Filter([f](const Element& element) {
               std::vector<Tensor> values = f->Run(element);
               if (values[0].dtype() != kBool || values[0].NumElements() != 1) {
                 throw InvalidArgument("a filter predicate must return a scalar bool, got ",
                                       values[0].DebugString(3));
               }
               return values[0].scalar<bool>();
             });
           })
      // Graph iterators in `graph`: (iterator, initializer Node or None).
      .def("make_one_shot_iterator",
           [](const Dataset& d, Graph& g, const std::string& prefix) {
             return d.MakeOneShotIterator(MakeScope(g, prefix));
           })
      .def("make_initializable_iterator",
           [](const Dataset& d, Graph& g, const std::string& prefix) {
             return d.MakeInitializableIterator(MakeScope(g, prefix));
           });

  py::class_<data::GraphIterator>(m, "GraphIterator")
      .def_static("from_structure",
                  [](Graph& g, const std::string& prefix, const py::dict& spec) {
                    return data::GraphIterator::FromStructure(MakeScope(g, prefix),
                                                              SpecFromPython(spec));
                  })
      .def_property_readonly(
          "initializer", [](const data::GraphIterator& it) { return it.initializer().node; },
          py::return_value_policy::reference)
      .def(
          "make_initializer",
          [](const data::GraphIterator& it, const Dataset& d) {
            return it.MakeInitializer(d).node;
          },
          py::return_value_policy::reference)
      .def("get_next", [](const data::GraphIterator& it) { return OutputsToPython(it.GetNext()); })
      .def_property_readonly("spec",
                             [](const data::GraphIterator& it) { return SpecToPython(it.spec()); })
      .def_property_readonly("resource_name", &data::GraphIterator::resource_name);

  // Sources. Arrays are borrowed (convert.h): the dataset views their memory, no copy.
  m.def("from_tensor_slices", [](const py::dict& components) {
    std::map<std::string, Tensor> tensors;
    std::map<std::string, Output> outputs;
    for (auto [name, value] : components) {
      std::string key = name.cast<std::string>();
      if (py::isinstance<Output>(value)) {
        outputs[key] = value.cast<Output>();
      } else {
        tensors[key] =
            ToTensor(value, DType::kInvalid, "from_tensor_slices component '" + key + "'");
      }
    }
    if (!outputs.empty() && !tensors.empty()) {
      throw InvalidArgument(
          "from_tensor_slices: components mix arrays and graph tensors; give "
          "all as placeholders or all as arrays");
    }
    return outputs.empty() ? data::FromTensorSlices(std::move(tensors))
                           : data::FromTensorSlices(std::move(outputs));
  });
  m.def("from_tensors", [](const py::dict& components) {
    std::map<std::string, Tensor> tensors;
    for (auto [name, value] : components) {
      std::string key = name.cast<std::string>();
      tensors[key] = ToTensor(value, DType::kInvalid, "from_tensors component '" + key + "'");
    }
    return data::FromTensors(std::move(tensors));
  });
  m.def("range",
        [](int64_t start, int64_t stop, int64_t step) { return data::Range(start, stop, step); });
  m.def("zip", &data::Zip);
  m.def("tfrecord_dataset", [](const std::vector<std::string>& files,
                               const std::string& compression, std::optional<size_t> buffer_size) {
    data::TFRecordOptions options{.compression = compression};
    if (buffer_size && *buffer_size > 0) options.buffer_size = *buffer_size;
    return data::TFRecordDataset(files, options);
  });
  m.def("text_line_dataset",
        [](const std::vector<std::string>& files, const std::string& compression) {
          return data::TextLineDataset(files, {.compression = compression});
        });
  // The borrowed arrays of a dataset stay alive with it; for tests, the address a
  // component's first slice would read from.
  m.def("tensor_address", [](py::handle value) {
    Tensor t = ToTensor(value, DType::kInvalid, "value");
    return reinterpret_cast<uintptr_t>(t.raw_data());
  });
}

}  // namespace loom::python
