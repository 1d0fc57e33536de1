// `loom inspect` on an ONNX model (`model.onnx`, what `loom export --format onnx` writes, or
// any other producer's): the header (IR version, producer, opsets), the graph's inputs and
// outputs with their element types and shapes, a histogram of ops, and the initializers
// with their parameter count, inline or in external data files. Read with Loom's
// onnx.proto (loom/io/proto/onnx.proto, ONNX's field numbers). Damage is DataLoss after
// what could be read is shown: bytes that do not parse, a node reading a value that
// nothing produces, an initializer whose bytes do not match its shape, external data that
// is missing, shorter than its offset + length, or outside the model's directory.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "loom/base/error.h"
#include "loom/cli/inspect_internal.h"
#include "loom/io/proto/onnx.pb.h"

namespace loom::cli {
namespace {

struct ElementType {
  const char* name;
  int bytes;  // 0: variable size (strings)
};

// ONNX's TensorProto.DataType codes.
ElementType OnnxElementType(int code) {
  switch (code) {
    case 1:
      return {"float32", 4};
    case 2:
      return {"uint8", 1};
    case 3:
      return {"int8", 1};
    case 4:
      return {"uint16", 2};
    case 5:
      return {"int16", 2};
    case 6:
      return {"int32", 4};
    case 7:
      return {"int64", 8};
    case 8:
      return {"string", 0};
    case 9:
      return {"bool", 1};
    case 10:
      return {"float16", 2};
    case 11:
      return {"float64", 8};
    case 12:
      return {"uint32", 4};
    case 13:
      return {"uint64", 8};
    case 14:
      return {"complex64", 8};
    case 15:
      return {"complex128", 16};
    case 16:
      return {"bfloat16", 2};
    default:
      return {nullptr, -1};
  }
}

std::string ElementTypeName(int code) {
  const ElementType t = OnnxElementType(code);
  return t.name != nullptr ? t.name : StrCat("elem_type ", code);
}

// "float32[?,784]", "float32[batch,10]", "float32<unknown rank>".
std::string ValueInfoString(const onnx::ValueInfoProto& info) {
  if (!info.type().has_tensor_type()) return "(not a tensor)";
  const auto& tensor = info.type().tensor_type();
  std::string out = ElementTypeName(tensor.elem_type());
  if (!tensor.has_shape()) return out + "<unknown rank>";
  out += '[';
  for (int i = 0; i < tensor.shape().dim_size(); ++i) {
    const auto& dim = tensor.shape().dim(i);
    if (i > 0) out += ',';
    out += dim.has_dim_value()   ? std::to_string(dim.dim_value())
           : dim.has_dim_param() ? dim.dim_param()
                                 : "?";
  }
  return out + ']';
}

std::string DimsString(const onnx::TensorProto& t) {
  std::string out = "[";
  for (int i = 0; i < t.dims_size(); ++i) out += (i ? "," : "") + std::to_string(t.dims(i));
  return out + "]";
}

// The element count of an initializer, from dims read from the file (checked: a negative
// dim or a product past 2^58, whose byte count could overflow, is damage).
int64_t ElementCount(const std::string& path, const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && n > (int64_t{1} << 58) / d)) {
      throw DataLoss("'", path, "' is damaged: initializer '", t.name(), "' has dims ",
                     DimsString(t), ", whose element count is negative or overflows");
    }
    n *= d;
  }
  return n;
}

// The bytes the initializer holds inline, or -1 when they are in typed fields that do
// not tell a byte count by themselves (strings).
int64_t InlineCount(const onnx::TensorProto& t) {
  if (t.has_raw_data()) return -1;
  return t.float_data_size() + t.int32_data_size() + t.int64_data_size() + t.double_data_size() +
         t.uint64_data_size() + t.string_data_size();
}

std::map<std::string, std::string> ExternalData(const onnx::TensorProto& t) {
  std::map<std::string, std::string> out;
  for (const auto& entry : t.external_data()) out[entry.key()] = entry.value();
  return out;
}

int64_t ParseNonNegative(const std::string& path, const onnx::TensorProto& t,
                         const std::string& key, const std::string& value) {
  if (value.empty() || value.size() > 18 ||
      !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    throw DataLoss("'", path, "' is damaged: initializer '", t.name(), "' has external_data ", key,
                   " '", value, "', which is not a non-negative integer");
  }
  return std::stoll(value);
}

// Checks an initializer's bytes against its dims; returns the bytes it stores externally.
int64_t CheckInitializer(Env* env, const std::string& path, const onnx::TensorProto& t) {
  const ElementType type = OnnxElementType(t.data_type());
  if (type.name == nullptr) {
    throw DataLoss("'", path, "' is damaged: initializer '", t.name(), "' has data_type ",
                   t.data_type(), ", which is no ONNX element type");
  }
  const int64_t elements = ElementCount(path, t);
  const bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
  if (!external) {
    if (t.has_raw_data() && type.bytes > 0 &&
        static_cast<int64_t>(t.raw_data().size()) != elements * type.bytes) {
      throw DataLoss("'", path, "' is damaged: initializer '", t.name(), "' (", type.name,
                     DimsString(t), ") needs ", elements * type.bytes,
                     " bytes of raw_data but has ", t.raw_data().size());
    }
    const int64_t count = InlineCount(t);
    // complex numbers take two values each in float_data / double_data.
    const int64_t want = elements * (t.data_type() == 14 || t.data_type() == 15 ? 2 : 1);
    if (count >= 0 && count != want && !(count == 0 && elements == 0)) {
      throw DataLoss("'", path, "' is damaged: initializer '", t.name(), "' (", type.name,
                     DimsString(t), ") holds ", count, " values where its dims need ", want);
    }
    return 0;
  }
  const std::map<std::string, std::string> ext = ExternalData(t);
  auto location = ext.find("location");
  if (location == ext.end() || location->second.empty()) {
    throw DataLoss("'", path, "' is damaged: initializer '", t.name(),
                   "' is EXTERNAL but its external_data names no location");
  }
  const std::string& file = location->second;
  // ONNX's checker rule: external data lies inside the model's directory.
  if (file[0] == '/' || file == ".." || file.starts_with("../") ||
      file.find("/../") != std::string::npos || file.ends_with("/..")) {
    throw DataLoss("'", path, "' is damaged or hostile: initializer '", t.name(),
                   "' has external data location '", file,
                   "', outside the model's directory; ONNX requires a relative path inside it");
  }
  const int64_t offset =
      ext.count("offset") ? ParseNonNegative(path, t, "offset", ext.at("offset")) : 0;
  const int64_t need = type.bytes > 0 ? elements * type.bytes : -1;
  const int64_t length =
      ext.count("length") ? ParseNonNegative(path, t, "length", ext.at("length")) : need;
  if (need >= 0 && length != need) {
    throw DataLoss("'", path, "' is damaged: initializer '", t.name(), "' (", type.name,
                   DimsString(t), ") needs ", need, " bytes but its external_data length is ",
                   length);
  }
  const std::string dir = Dirname(path);
  const std::string data_path = dir.empty() ? file : JoinPath(dir, file);
  if (!env->FileExists(data_path) || env->IsDirectory(data_path)) {
    throw DataLoss("'", path, "': initializer '", t.name(), "' is in external data file '",
                   data_path, "', which does not exist; keep it beside the model");
  }
  const uint64_t size = env->GetFileSize(data_path);
  if (length >= 0 && static_cast<uint64_t>(offset) + static_cast<uint64_t>(length) > size) {
    throw DataLoss("'", path, "': initializer '", t.name(), "' needs bytes [", offset, ", ",
                   offset + length, ") of '", data_path, "', which has ", size,
                   " bytes (it is truncated)");
  }
  return length;
}

}  // namespace

void InspectOnnx(Env* env, const std::string& path) {
  const uint64_t size = env->GetFileSize(path);
  onnx::ModelProto model;
  // protobuf's own limit is 2 GiB; ONNX puts larger weights in external data.
  if (size >= (uint64_t{1} << 31) || !model.ParseFromString(ReadFileToString(env, path)) ||
      !model.has_graph()) {
    throw DataLoss("'", path, "' (", size, " bytes) is damaged: it does not parse as an ONNX ",
                   "ModelProto with a graph (truncated or corrupt)");
  }
  const onnx::GraphProto& graph = model.graph();
  std::printf("ONNX model %s (%llu bytes)\n", path.c_str(), static_cast<unsigned long long>(size));
  std::printf("ir_version: %lld\n", static_cast<long long>(model.ir_version()));
  if (!model.producer_name().empty()) {
    std::printf("producer: %s%s%s\n", model.producer_name().c_str(),
                model.producer_version().empty() ? "" : " ", model.producer_version().c_str());
  }
  std::printf("opsets:");
  for (const auto& opset : model.opset_import())
    std::printf(" %s %lld", opset.domain().empty() ? "ai.onnx" : opset.domain().c_str(),
                static_cast<long long>(opset.version()));
  std::printf("%s\n", model.opset_import_size() == 0 ? " (none)" : "");
  std::printf("graph '%s': %d nodes\n", graph.name().c_str(), graph.node_size());

  std::set<std::string> initializers;
  for (const auto& t : graph.initializer()) initializers.insert(t.name());
  std::printf("inputs:\n");
  for (const auto& input : graph.input()) {
    if (initializers.count(input.name())) continue;  // IR < 4 lists initializers as inputs
    std::printf("  %-24s %s\n", input.name().c_str(), ValueInfoString(input).c_str());
  }
  std::printf("outputs:\n");
  for (const auto& output : graph.output())
    std::printf("  %-24s %s\n", output.name().c_str(), ValueInfoString(output).c_str());

  std::map<std::string, int> ops;
  for (const auto& node : graph.node()) {
    ++ops[node.domain().empty() ? node.op_type() : node.domain() + "." + node.op_type()];
  }
  std::vector<std::pair<int, std::string>> sorted;
  sorted.reserve(ops.size());
  for (const auto& [op, n] : ops) sorted.push_back({-n, op});
  std::sort(sorted.begin(), sorted.end());
  std::printf("ops:\n");
  for (const auto& [n, op] : sorted) std::printf("  %-32s %d\n", op.c_str(), -n);

  int64_t params = 0, external_bytes = 0;
  std::set<std::string> external_files;
  for (const auto& t : graph.initializer()) {
    external_bytes += CheckInitializer(env, path, t);
    params += ElementCount(path, t);
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      external_files.insert(ExternalData(t)["location"]);
  }
  std::printf("initializers: %d (%lld parameters", graph.initializer_size(),
              static_cast<long long>(params));
  if (!external_files.empty()) {
    std::printf("; %lld bytes in external data:", static_cast<long long>(external_bytes));
    for (const auto& f : external_files) std::printf(" %s", f.c_str());
  }
  std::printf(")\n");

  // Every value a node reads must come from a graph input, an initializer or an earlier
  // node (ONNX requires topological order); a model cut at a node boundary still parses.
  std::set<std::string> available(initializers);
  for (const auto& input : graph.input()) available.insert(input.name());
  for (const auto& node : graph.node()) {
    for (const std::string& in : node.input()) {
      if (in.empty() || available.count(in)) continue;  // "" is an omitted optional input
      throw DataLoss("'", path, "' is damaged: node '", node.name(), "' (", node.op_type(),
                     ") reads '", in,
                     "', which no graph input, initializer or earlier node produces");
    }
    for (const std::string& out : node.output()) available.insert(out);
  }
  for (const auto& output : graph.output()) {
    if (!available.count(output.name()))
      throw DataLoss("'", path, "' is damaged: graph output '", output.name(),
                     "' is produced by no node, input or initializer");
  }
}

}  // namespace loom::cli
