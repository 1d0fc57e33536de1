#include "loom/graph/graph_def.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "loom/graph/collections.h"
#include "loom/graph/graph_def_proto.h"
#include "loom/io/safetensors.h"

namespace loom {
namespace {

constexpr char kExternalAttr[] = "_external_data";
constexpr char kOutputShapesAttr[] = "_output_shapes";

void ShapeToProto(const Shape& shape, proto::TensorShapeProto* out) {
  if (!shape.rank_known()) {
    out->set_unknown_rank(true);
    return;
  }
  for (int64_t d : shape.dims()) out->add_dim()->set_size(d);
}

Shape ShapeFromProto(const proto::TensorShapeProto& p) {
  if (p.unknown_rank()) return Shape::Unknown();
  std::vector<int64_t> dims;
  for (const auto& d : p.dim()) dims.push_back(d.size() < 0 ? kUnknownDim : d.size());
  return Shape(std::move(dims));
}

proto::DataType DTypeToProto(DType d) { return static_cast<proto::DataType>(static_cast<int>(d)); }

DType DTypeFromProto(proto::DataType d, const std::string& node) {
  if (!IsValidDType(static_cast<int>(d))) {
    throw InvalidArgument("node '", node, "': dtype enum ", static_cast<int>(d),
                          " is not supported by Loom");
  }
  return static_cast<DType>(static_cast<int>(d));
}

// Values inline (tensor_content / string_val), or only dtype + shape when `with_values`
// is false.
void TensorToProto(const Tensor& t, bool with_values, proto::TensorProto* out) {
  out->set_dtype(DTypeToProto(t.dtype()));
  ShapeToProto(t.shape(), out->mutable_tensor_shape());
  if (!with_values) return;
  if (t.dtype() == kString) {
    for (const std::string& s : t.flat<std::string>()) out->add_string_val(s);
  } else {
    out->set_tensor_content(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  }
}

// A value repeated into a tensor (one string_val or typed value, or none for zeros) may
// fill at most this many bytes: Loom writes every value, so only a hand-made or hostile
// GraphDef uses the compact form, and a 50-byte one must not allocate gigabytes.
constexpr uint64_t kMaxFilledTensorBytes = 1 << 20;

// Everything is checked against what the proto holds before the tensor is allocated.
Tensor TensorFromProto(const proto::TensorProto& p, const std::string& node) {
  DType dtype = DTypeFromProto(p.dtype(), node);
  Shape shape = ShapeFromProto(p.tensor_shape());
  if (!shape.fully_defined()) {
    throw InvalidArgument("node '", node, "': tensor attribute has partial shape ", shape);
  }
  const uint64_t element_size = std::max<uint64_t>(1, DTypeSize(dtype));
  const std::optional<int64_t> count = shape.NumElementsAtMost(INT64_MAX / element_size);
  if (!count) {
    throw InvalidArgument("node '", node, "': tensor attribute shape ", shape,
                          " has more elements than a tensor can hold");
  }
  const int64_t n = *count;
  const auto fill_limit = [&](int64_t given) {
    if (given != n && static_cast<uint64_t>(n) * element_size > kMaxFilledTensorBytes) {
      throw InvalidArgument("node '", node, "': tensor attribute of shape ", shape, " and dtype ",
                            DTypeName(dtype), " holds ", given, " values to fill ", n,
                            " elements; Loom fills at most ", kMaxFilledTensorBytes,
                            " bytes from a repeated value (write every value)");
    }
  };
  if (dtype == kString) {
    if (p.string_val_size() != n && !(p.string_val_size() == 1 && n > 0)) {
      throw InvalidArgument("node '", node, "': ", p.string_val_size(), " string values for shape ",
                            shape);
    }
    fill_limit(p.string_val_size());
    Tensor t(dtype, shape);
    auto out = t.flat<std::string>();
    for (int64_t i = 0; i < n; ++i) out[i] = p.string_val(p.string_val_size() == 1 ? 0 : i);
    return t;
  }
  if (!p.tensor_content().empty()) {
    if (p.tensor_content().size() != static_cast<uint64_t>(n) * element_size) {
      throw InvalidArgument("node '", node, "': tensor_content has ", p.tensor_content().size(),
                            " bytes, shape ", shape, " of ", DTypeName(dtype), " needs ",
                            static_cast<uint64_t>(n) * element_size);
    }
    Tensor t(dtype, shape);
    std::memcpy(t.raw_data(), p.tensor_content().data(), t.TotalBytes());
    return t;
  }
  const int given = p.float_val_size() + p.double_val_size() + p.int_val_size() +
                    p.int64_val_size() + p.bool_val_size();
  fill_limit(given);
  Tensor t(dtype, shape);
  // TF's typed repeated fields; a single value fills the tensor.
  SwitchAll(dtype, "TensorProto", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, std::string>) {
      std::vector<T> values;
      if constexpr (std::is_same_v<T, float>)
        values.assign(p.float_val().begin(), p.float_val().end());
      if constexpr (std::is_same_v<T, double>)
        values.assign(p.double_val().begin(), p.double_val().end());
      if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, uint8_t>)
        for (int v : p.int_val()) values.push_back(static_cast<T>(v));
      if constexpr (std::is_same_v<T, int64_t>)
        values.assign(p.int64_val().begin(), p.int64_val().end());
      if constexpr (std::is_same_v<T, bool>)
        values.assign(p.bool_val().begin(), p.bool_val().end());
      T* out = t.data<T>();
      if (values.empty()) {
        for (int64_t i = 0; i < n; ++i) out[i] = T{};
      } else if (static_cast<int64_t>(values.size()) == n) {
        for (int64_t i = 0; i < n; ++i) out[i] = values[i];
      } else if (values.size() == 1) {
        for (int64_t i = 0; i < n; ++i) out[i] = values[0];
      } else {
        throw InvalidArgument("node '", node, "': ", values.size(), " values for shape ", shape);
      }
    }
    return 0;
  });
  return t;
}

void AttrToProto(const AttrValue& value, proto::AttrValue* out) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>)
          out->set_i(v);
        else if constexpr (std::is_same_v<T, double>)
          out->set_f(static_cast<float>(v));
        else if constexpr (std::is_same_v<T, bool>)
          out->set_b(v);
        else if constexpr (std::is_same_v<T, std::string>)
          out->set_s(v);
        else if constexpr (std::is_same_v<T, DType>)
          out->set_type(DTypeToProto(v));
        else if constexpr (std::is_same_v<T, Shape>)
          ShapeToProto(v, out->mutable_shape());
        else if constexpr (std::is_same_v<T, Tensor>)
          TensorToProto(v, true, out->mutable_tensor());
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          auto* list = out->mutable_list();
          for (int64_t x : v) list->add_i(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          auto* list = out->mutable_list();
          for (double x : v) list->add_f(static_cast<float>(x));
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          auto* list = out->mutable_list();
          for (const auto& x : v) list->add_s(x);
        } else if constexpr (std::is_same_v<T, std::vector<DType>>) {
          auto* list = out->mutable_list();
          for (DType x : v) list->add_type(DTypeToProto(x));
        } else if constexpr (std::is_same_v<T, std::vector<Shape>>) {
          auto* list = out->mutable_list();
          for (const Shape& x : v) ShapeToProto(x, list->add_shape());
        }
      },
      value);
}

AttrValue AttrFromProto(const proto::AttrValue& p, const std::string& node) {
  switch (p.value_case()) {
    case proto::AttrValue::kI:
      return p.i();
    case proto::AttrValue::kF:
      return static_cast<double>(p.f());
    case proto::AttrValue::kB:
      return p.b();
    case proto::AttrValue::kS:
      return p.s();
    case proto::AttrValue::kType:
      return DTypeFromProto(p.type(), node);
    case proto::AttrValue::kShape:
      return ShapeFromProto(p.shape());
    case proto::AttrValue::kTensor:
      return TensorFromProto(p.tensor(), node);
    case proto::AttrValue::kList: {
      const auto& l = p.list();
      // An empty list is stored as an int list: Loom's list attributes are read with
      // GetOr-style defaults or are int lists (axes, shapes, strides).
      if (l.f_size() > 0) return std::vector<double>(l.f().begin(), l.f().end());
      if (l.s_size() > 0) return std::vector<std::string>(l.s().begin(), l.s().end());
      if (l.type_size() > 0) {
        std::vector<DType> types;
        for (int t : l.type())
          types.push_back(DTypeFromProto(static_cast<proto::DataType>(t), node));
        return types;
      }
      if (l.shape_size() > 0) {
        std::vector<Shape> shapes;
        for (const auto& s : l.shape()) shapes.push_back(ShapeFromProto(s));
        return shapes;
      }
      return std::vector<int64_t>(l.i().begin(), l.i().end());
    }
    default:
      throw InvalidArgument("node '", node, "': attribute kind ", static_cast<int>(p.value_case()),
                            " is not supported by Loom");
  }
}

std::string InputName(const Output& o) {
  return o.index == 0 ? o.node->name() : StrCat(o.node->name(), ":", o.index);
}

void CollectionsToProto(const Collections& collections, proto::GraphDef& def) {
  for (const auto& [name, collection] : collections.all()) {
    proto::GraphCollection* c = def.add_loom_collections();
    c->set_name(name);
    c->set_kind(static_cast<proto::GraphCollection::Kind>(static_cast<int>(collection.kind)));
    for (const Collections::Member& m : collection.members) {
      proto::GraphCollection::Member* pm = c->add_member();
      pm->set_node(m.node->name());
      if (collection.kind == Collections::Kind::kOutput) pm->set_index(m.index);
      if (m.initializer != nullptr) pm->set_initializer(m.initializer->name());
    }
  }
}

// After the nodes: members name nodes of the graph.
void CollectionsFromProto(const proto::GraphDef& def, Graph& graph) {
  for (const proto::GraphCollection& c : def.loom_collections()) {
    if (!proto::GraphCollection::Kind_IsValid(c.kind())) {
      throw InvalidArgument("collection '", c.name(), "': kind ", static_cast<int>(c.kind()),
                            " is not supported by Loom");
    }
    const auto kind = static_cast<Collections::Kind>(static_cast<int>(c.kind()));
    const auto node = [&](const std::string& name) {
      Node* n = graph.FindNode(name);
      if (n == nullptr) {
        throw NotFound("collection '", c.name(), "' names node '", name,
                       "', which is not in the graph");
      }
      return n;
    };
    for (const proto::GraphCollection::Member& m : c.member()) {
      Collections::Member member{node(m.node()), m.index(), nullptr};
      if (kind == Collections::Kind::kVariable) member.initializer = node(m.initializer());
      graph.collections().AddMember(c.name(), kind, member);
    }
  }
}

}  // namespace

std::string SerializeGraphDef(const proto::GraphDef& def) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    def.SerializeToCodedStream(&coded);
  }
  return bytes;
}

std::string GraphSidecarPath(const std::string& graph_path) {
  return graph_path + ".data.safetensors";
}

proto::GraphDef ToGraphDef(const Graph& graph, const GraphExportOptions& options,
                           std::vector<std::pair<std::string, Tensor>>* external) {
  proto::GraphDef def;
  def.mutable_versions()->set_producer(1);
  for (int id = 0; id < graph.num_nodes(); ++id) {
    const Node* node = graph.node(id);
    proto::NodeDef* nd = def.add_node();
    nd->set_name(node->name());
    nd->set_op(node->op());
    for (const Output& in : node->inputs()) nd->add_input(InputName(in));
    for (const Node* c : node->control_inputs()) nd->add_input("^" + c->name());
    auto* attrs = nd->mutable_attr();
    for (const auto& [name, value] : node->attrs().map()) {
      // A host object (a dataset) lives in this process only; the loaded node lacks it,
      // and its kernel says to rebuild the object.
      if (std::holds_alternative<HostObject>(value)) continue;
      const Tensor* t = std::get_if<Tensor>(&value);
      if (t != nullptr && static_cast<int64_t>(t->TotalBytes()) > options.inline_constant_bytes &&
          t->dtype() != kString) {
        TensorToProto(*t, /*with_values=*/false, (*attrs)[name].mutable_tensor());
        (*attrs)[kExternalAttr].set_s(name);
        if (external) external->push_back({node->name(), *t});
        continue;
      }
      AttrToProto(value, &(*attrs)[name]);
    }
    if (node->num_outputs() > 0) {
      auto* shapes = (*attrs)[kOutputShapesAttr].mutable_list();
      for (int o = 0; o < node->num_outputs(); ++o)
        ShapeToProto(node->output_shape(o), shapes->add_shape());
    }
  }
  CollectionsToProto(graph.collections(), def);
  return def;
}

void ImportGraphDef(const proto::GraphDef& def, const OpRegistry& registry, Graph& graph, Env* env,
                    const std::string& sidecar_path) {
  std::unique_ptr<SafetensorsReader> sidecar;
  for (const proto::NodeDef& nd : def.node()) {
    const OpDef& op = registry.Get(nd.op());
    std::vector<Output> inputs;
    std::vector<Node*> controls;
    for (const std::string& in : nd.input()) {
      if (!in.empty() && in[0] == '^') {
        Node* c = graph.FindNode(in.substr(1));
        if (c == nullptr) {
          throw NotFound("node '", nd.name(), "': control input '", in.substr(1),
                         "' is not defined before it; the GraphDef is not in topological order");
        }
        controls.push_back(c);
      } else {
        try {
          inputs.push_back(graph.GetOutput(in));
        } catch (const Error& e) {
          throw WithContext(e, "node '", nd.name(), "': input '", in, "'");
        }
      }
    }
    AttrMap attrs;
    // The attribute named by kExternalAttr holds only a shape and dtype here; its values
    // come from the sidecar (so it is not decoded from the proto, which would find no
    // values to fill it).
    std::string external_attr;
    if (auto it = nd.attr().find(kExternalAttr); it != nd.attr().end())
      external_attr = it->second.s();
    for (const auto& [name, value] : nd.attr()) {
      if (name == kOutputShapesAttr || name == kExternalAttr) continue;
      if (!external_attr.empty() && name == external_attr) continue;
      attrs.Set(name, AttrFromProto(value, nd.name()));
    }
    if (!external_attr.empty()) {
      if (env == nullptr || sidecar_path.empty()) {
        throw InvalidArgument("node '", nd.name(),
                              "' keeps its value in a sidecar file, but "
                              "none was given; load the graph with ImportGraph(path)");
      }
      if (!sidecar) sidecar = SafetensorsReader::Open(env, sidecar_path);
      if (!sidecar->Contains(nd.name())) {
        throw DataLoss("sidecar '", sidecar_path, "' lacks the value of node '", nd.name(), "'");
      }
      attrs.Set(external_attr, sidecar->Get(nd.name()));
    }
    graph.AddNode(op, nd.name(), std::move(inputs), std::move(attrs), std::move(controls));
  }
  CollectionsFromProto(def, graph);
}

std::string SerializeGraph(const Graph& graph, const GraphExportOptions& options,
                           std::vector<std::pair<std::string, Tensor>>* external) {
  return SerializeGraphDef(ToGraphDef(graph, options, external));
}

std::string GraphToText(const Graph& graph, const GraphExportOptions& options) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(ToGraphDef(graph, options), &text);
  return text;
}

void ImportSerializedGraph(std::string_view serialized, const OpRegistry& registry, Graph& graph,
                           Env* env, const std::string& sidecar_path) {
  proto::GraphDef def;
  if (serialized.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !def.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    throw DataLoss("the ", serialized.size(),
                   " bytes given are not a GraphDef (protobuf parse "
                   "failed); pass what SerializeGraph or ExportGraph wrote");
  }
  ImportGraphDef(def, registry, graph, env, sidecar_path);
}

void ExportGraph(const Graph& graph, Env* env, const std::string& path,
                 const GraphExportOptions& options) {
  std::vector<std::pair<std::string, Tensor>> external;
  const std::string bytes = SerializeGraph(graph, options, &external);
  if (!external.empty()) WriteSafetensors(env, GraphSidecarPath(path), external);
  WriteFileAtomically(env, path, bytes);
}

void ImportGraph(Env* env, const std::string& path, const OpRegistry& registry, Graph& graph) {
  std::string bytes = ReadFileToString(env, path);
  proto::GraphDef def;
  if (!def.ParseFromString(bytes)) {
    throw DataLoss("'", path,
                   "' is not a GraphDef (protobuf parse failed); was it written by "
                   "ExportGraph?");
  }
  ImportGraphDef(def, registry, graph, env, GraphSidecarPath(path));
}

}  // namespace loom
