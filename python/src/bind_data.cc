// Datasets and their graph iterators. A map or filter function is traced once by the
// package into a graph of its own (placeholders for the element's components in, the
// results out); here it becomes a C++ MapFn that runs that graph in a Session per element,
// so no Python code runs per element and the GIL is never taken in the pipeline.
#include <pybind11/stl.h>

#include "loom/data/dataset.h"
#include "loom/data/file_sources.h"
#include "loom/runtime/session.h"
#include "python/src/bind_util.h"
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

// Runs `f` on `in` and names its results by the function's output components.
Element RunToElement(const TracedFunction& f, const Element& in) {
  std::vector<Tensor> values = f.Run(in);
  Element out;
  for (size_t i = 0; i < values.size(); ++i) out[f.output_names[i]] = std::move(values[i]);
  return out;
}

// The reduce function of a traced reduce_func(state, element): its inputs are named
// "s:<state component>" and "e:<element component>".
data::ReduceFn TracedReduceFn(std::shared_ptr<Graph> graph,
                              const std::map<std::string, Output>& state_inputs,
                              const std::map<std::string, Output>& element_inputs,
                              const std::map<std::string, Output>& new_state) {
  std::map<std::string, Output> inputs;
  for (const auto& [name, out] : state_inputs) inputs["s:" + name] = out;
  for (const auto& [name, out] : element_inputs) inputs["e:" + name] = out;
  auto f = MakeTraced(std::move(graph), inputs, new_state, 1);
  return [f](Element state, Element element) {
    Element in;
    for (auto& [name, t] : state) in["s:" + name] = std::move(t);
    for (auto& [name, t] : element) in["e:" + name] = std::move(t);
    return RunToElement(*f, in);
  };
}

int64_t ScalarInt64(const Tensor& t, std::string_view what) {
  if (t.dtype() != kInt64 || t.NumElements() != 1) {
    throw InvalidArgument(what, " must return a scalar int64, got ", t.DebugString(3));
  }
  return t.flat<int64_t>()[0];
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

py::dict ElementToPython(const Element& element) {
  py::dict d;
  for (const auto& [name, t] : element) d[py::str(name)] = ToNumpy(t);
  return d;
}

// A Python dict {component: value} as an Element of `spec` (each value converted to its
// component's dtype); `what` names the producer in errors.
Element ElementFromPython(py::handle value, const data::ElementSpec& spec, std::string_view what) {
  if (!py::isinstance<py::dict>(value)) {
    throw InvalidArgument(what, " must give a dict of components, got ",
                          py::str(py::type::of(value)).cast<std::string>());
  }
  auto d = py::reinterpret_borrow<py::dict>(value);
  Element element;
  for (const auto& [name, s] : spec) {
    if (!d.contains(name)) throw InvalidArgument(what, " gave no value for component '", name, "'");
    element[name] = ToTensor(d[py::str(name)], s.dtype, StrCat(what, " component '", name, "'"));
  }
  return element;
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
      .def("repeat", py::overload_cast<int64_t>(&Dataset::Repeat, py::const_))
      .def("repeat", py::overload_cast<Output>(&Dataset::Repeat, py::const_))
      .def("take", &Dataset::Take)
      .def("skip", &Dataset::Skip)
      .def("shard", &Dataset::Shard)
      .def("prefetch", &Dataset::Prefetch)
      .def("unbatch", &Dataset::Unbatch)
      .def("cache", [](const Dataset& d, const std::string& filename) { return d.Cache(filename); })
      .def("concatenate", &Dataset::Concatenate)
      // padded_batch(batch_size, {component: shape}, {component: scalar}, drop_remainder).
      .def("padded_batch",
           [](const Dataset& d, int64_t n, const py::dict& padded_shapes,
              const py::dict& padding_values, bool drop) {
             data::PaddedBatchOptions options{.drop_remainder = drop};
             for (auto [name, shape] : padded_shapes) {
               options.padded_shapes[name.cast<std::string>()] = ToShape(shape);
             }
             for (auto [name, value] : padding_values) {
               std::string key = name.cast<std::string>();
               auto it = d.spec().find(key);
               options.padding_values[key] =
                   ToTensor(value, it == d.spec().end() ? DType::kInvalid : it->second.dtype,
                            "padded_batch padding_values component '" + key + "'");
             }
             return d.PaddedBatch(n, std::move(options));
           })
      // interleave(fn, output_spec, cycle_length, block_length, num_parallel_calls): fn, a
      // Python callable, gets an input element ({component: numpy array}) and returns a
      // Dataset of output_spec. It runs with the GIL, once per input element (and again
      // for each open slot on restore).
      .def("interleave_py",
           [](const Dataset& d, py::object fn, const py::dict& output_spec, int cycle_length,
              int block_length, int num_parallel_calls) {
             data::InterleaveFn interleave = [f = PyRef(std::move(fn))](const Element& element) {
               py::gil_scoped_acquire gil;
               return f.get()(ElementToPython(element)).cast<Dataset>();
             };
             return d.Interleave(std::move(interleave), SpecFromPython(output_spec),
                                 {.cycle_length = cycle_length,
                                  .block_length = block_length,
                                  .num_parallel_calls = num_parallel_calls});
           })
      // window(size, shift (0: size), stride, drop_remainder): windows stacked per element.
      .def("window",
           [](const Dataset& d, int64_t size, int64_t shift, int64_t stride, bool drop) {
             return d.Window(size, {.shift = shift, .stride = stride, .drop_remainder = drop});
           })
      // reduce_traced(graph, prefix, initial_state {component: Output of graph}, fn_graph,
      // state placeholders, element placeholders, new state {component: Output of
      // fn_graph}, state_spec): a ReduceDataset node in `graph` whose outputs
      // ({component: Output}) fold the traced function over the dataset.
      .def("reduce_traced",
           [](const Dataset& d, Graph& g, const std::string& prefix,
              const std::map<std::string, Output>& initial_state, std::shared_ptr<Graph> fn_graph,
              const std::map<std::string, Output>& state_inputs,
              const std::map<std::string, Output>& element_inputs,
              const std::map<std::string, Output>& new_state, const py::dict& state_spec) {
             data::ReduceFn fn =
                 TracedReduceFn(std::move(fn_graph), state_inputs, element_inputs, new_state);
             return OutputsToPython(d.Reduce(MakeScope(g, prefix), initial_state, std::move(fn),
                                             SpecFromPython(state_spec)));
           })
      // group_by_reducer_py(key_graph, key_inputs, key, init_graph, init_key, init_state,
      // reduce_graph, reduce_state_inputs, reduce_element_inputs, reduce_new_state,
      // finalize_graph, finalize_inputs, finalize_outputs, output_spec): every function
      // traced ({component: Output} maps; init's input is its key placeholder).
      .def("group_by_reducer_py",
           [](const Dataset& d, std::shared_ptr<Graph> key_graph,
              const std::map<std::string, Output>& key_inputs, Output key,
              std::shared_ptr<Graph> init_graph, Output init_key,
              const std::map<std::string, Output>& init_state, std::shared_ptr<Graph> reduce_graph,
              const std::map<std::string, Output>& reduce_state_inputs,
              const std::map<std::string, Output>& reduce_element_inputs,
              const std::map<std::string, Output>& reduce_new_state,
              std::shared_ptr<Graph> finalize_graph,
              const std::map<std::string, Output>& finalize_inputs,
              const std::map<std::string, Output>& finalize_outputs, const py::dict& output_spec) {
             auto kf = MakeTraced(std::move(key_graph), key_inputs, {{"key", key}}, 1);
             auto init = MakeTraced(std::move(init_graph), {{"key", init_key}}, init_state, 1);
             auto fin = MakeTraced(std::move(finalize_graph), finalize_inputs, finalize_outputs, 1);
             data::Reducer reducer{
                 .init =
                     [init](int64_t k) {
                       return RunToElement(*init, {{"key", Tensor::Scalar<int64_t>(k)}});
                     },
                 .reduce = TracedReduceFn(std::move(reduce_graph), reduce_state_inputs,
                                          reduce_element_inputs, reduce_new_state),
                 .finalize = [fin](Element state) { return RunToElement(*fin, state); },
             };
             return d.GroupByReducer(
                 [kf](const Element& e) {
                   return ScalarInt64(kf->Run(e)[0], "group_by_reducer: key_func");
                 },
                 std::move(reducer), SpecFromPython(output_spec));
           })
      // group_by_window_py(key_graph, key_inputs, key, reduce_fn, window_size, size_graph,
      // size_input, size_output, output_spec): key (traced: int64 scalar per element);
      // reduce_fn(key, group Dataset) -> Dataset, a Python callable run with the GIL once
      // per group; window_size, or, when size_graph is given, the traced window size of a
      // key (size_input: its key placeholder).
      .def("group_by_window_py",
           [](const Dataset& d, std::shared_ptr<Graph> key_graph,
              const std::map<std::string, Output>& key_inputs, Output key, py::object reduce_fn,
              int64_t window_size, std::shared_ptr<Graph> size_graph,
              std::optional<Output> size_input, std::optional<Output> size_output,
              const py::dict& output_spec) {
             auto scalar_int64 = [](const Tensor& t, std::string_view what) {
               if (t.dtype() != kInt64 || t.NumElements() != 1) {
                 throw InvalidArgument("group_by_window: ", what,
                                       " must return a scalar int64, got ", t.DebugString(3));
               }
               return t.flat<int64_t>()[0];
             };
             auto kf = MakeTraced(std::move(key_graph), key_inputs, {{"key", key}}, 1);
             data::KeyFn key_fn = [kf, scalar_int64](const Element& e) {
               return scalar_int64(kf->Run(e)[0], "key_func");
             };
             data::GroupReduceFn reduce = [f = PyRef(std::move(reduce_fn))](int64_t k,
                                                                            const Dataset& window) {
               py::gil_scoped_acquire gil;
               return f.get()(k, window).cast<Dataset>();
             };
             data::ElementSpec spec = SpecFromPython(output_spec);
             if (size_graph == nullptr) {
               return d.GroupByWindow(std::move(key_fn), std::move(reduce), window_size, spec);
             }
             if (!size_input || !size_output) {
               throw InvalidArgument(
                   "group_by_window: a window size graph needs its input and output");
             }
             auto sf = MakeTraced(std::move(size_graph), {{"key", *size_input}},
                                  {{"size", *size_output}}, 1);
             data::WindowSizeFn size_fn = [sf, scalar_int64](int64_t k) {
               return scalar_int64(sf->Run({{"key", Tensor::Scalar<int64_t>(k)}})[0],
                                   "window_size_func");
             };
             return d.GroupByWindow(std::move(key_fn), std::move(reduce), std::move(size_fn), spec);
           })
      // The first element ({component: numpy array}), or None when the dataset is empty,
      // from a fresh iterator outside any Session (a dataset over placeholders throws
      // FailedPrecondition).
      .def("first_element",
           [](const Dataset& d) -> py::object {
             std::optional<Element> e = WithoutGil([&] { return d.MakeIterator()->GetNext(); });
             if (!e) return py::none();
             return ElementToPython(*e);
           })
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
  // from_generator(make, spec): make() is called once per iterator (and again on restore,
  // which replays it) and returns a callable giving the next element as {component: value}
  // or None at the end. Both run with the GIL.
  m.def("from_generator", [](py::object make, const py::dict& spec) {
    data::ElementSpec element_spec = SpecFromPython(spec);
    auto make_generator = [make = PyRef(std::move(make)), element_spec]() -> data::Generator {
      py::gil_scoped_acquire gil;
      PyRef next(make.get()());
      return [next, element_spec]() -> std::optional<Element> {
        py::gil_scoped_acquire gil;
        py::object value = next.get()();
        if (value.is_none()) return std::nullopt;
        return ElementFromPython(value, element_spec, "from_generator's generator");
      };
    };
    return data::FromGenerator(std::move(make_generator), std::move(element_spec));
  });
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
