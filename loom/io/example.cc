#include "loom/io/example.h"

#include <algorithm>
#include <functional>

#include "loom/base/error.h"

namespace loom {
namespace {

using RecordNameFn = std::function<std::string(size_t)>;

std::string_view KindName(const proto::Feature& f) {
  switch (f.kind_case()) {
    case proto::Feature::kBytesList: return "bytes_list";
    case proto::Feature::kFloatList: return "float_list";
    case proto::Feature::kInt64List: return "int64_list";
    default: return "empty feature";
  }
}

std::string_view ListNameFor(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float_list";
    case DType::kInt64: return "int64_list";
    default: return "bytes_list";
  }
}

void CheckSpecDType(DType dtype, const std::string& name, std::string_view kind) {
  if (dtype != kFloat32 && dtype != kInt64 && dtype != kString) {
    throw InvalidArgument(kind, " '", name, "' has dtype ", dtype,
                          "; Example features hold float32, int64 or string");
  }
}

// The repeated field of f that holds values of T (float, int64_t or std::string).
template <typename T>
const auto& ValuesOf(const proto::Feature& f) {
  if constexpr (std::is_same_v<T, float>) {
    return f.float_list().value();
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return f.int64_list().value();
  } else {
    return f.bytes_list().value();
  }
}

// Number of values in f, after checking that its list type matches dtype.
int64_t CheckedSize(const proto::Feature& f, DType dtype, const std::string& name,
                    const std::string& record) {
  switch (f.kind_case()) {
    case proto::Feature::KIND_NOT_SET: return 0;
    case proto::Feature::kFloatList:
      if (dtype == kFloat32) return f.float_list().value_size();
      break;
    case proto::Feature::kInt64List:
      if (dtype == kInt64) return f.int64_list().value_size();
      break;
    case proto::Feature::kBytesList:
      if (dtype == kString) return f.bytes_list().value_size();
      break;
  }
  throw InvalidArgument("feature '", name, "' in ", record, " is a ", KindName(f),
                        " but the spec asks for ", dtype, " (a ", ListNameFor(dtype),
                        "); fix the dtype in the feature spec");
}

// Copies f's values to out[offset, offset + size).
template <typename T>
void CopyValues(const proto::Feature& f, Tensor& out, int64_t offset) {
  if (f.kind_case() == proto::Feature::KIND_NOT_SET) return;
  const auto& values = ValuesOf<T>(f);
  std::copy(values.begin(), values.end(), out.data<T>() + offset);
}

const proto::Feature* Find(const proto::Example& ex, const std::string& name) {
  const auto& map = ex.features().feature();
  auto it = map.find(name);
  return it == map.end() ? nullptr : &it->second;
}

template <typename T>
void ParseFixed(const std::vector<proto::Example>& examples, const std::string& name,
                const FixedLenFeature& spec, const RecordNameFn& record_name,
                ParsedFeature& out) {
  const int64_t per_record = spec.shape.num_elements();
  const int64_t batch = static_cast<int64_t>(examples.size());
  Tensor values(spec.dtype, spec.shape.WithLeadingDim(batch));
  T* dst = values.data<T>();
  for (int64_t i = 0; i < batch; ++i) {
    const proto::Feature* f = Find(examples[i], name);
    if (f == nullptr) {
      if (!spec.default_value) {
        throw InvalidArgument("feature '", name, "' is missing from ", record_name(i),
                              " and its FixedLenFeature has no default_value; add one or "
                              "fix the data");
      }
      std::span<const T> def = spec.default_value->flat<T>();
      for (int64_t j = 0; j < per_record; ++j) {
        dst[i * per_record + j] = def.size() == 1 ? def[0] : def[j];
      }
      continue;
    }
    int64_t n = CheckedSize(*f, spec.dtype, name, record_name(i));
    if (n != per_record) {
      throw InvalidArgument("feature '", name, "' in ", record_name(i), " has ", n,
                            " values but its FixedLenFeature shape ", spec.shape, " needs ",
                            per_record, "; use a VarLenFeature for variable-length data");
    }
    CopyValues<T>(*f, values, i * per_record);
  }
  out.values = std::move(values);
}

template <typename T>
void ParseVarLen(const std::vector<proto::Example>& examples, const std::string& name,
                 const VarLenFeature& spec, const RecordNameFn& record_name,
                 ParsedFeature& out) {
  const int64_t batch = static_cast<int64_t>(examples.size());
  std::vector<const proto::Feature*> features(batch);
  std::vector<int64_t> splits(batch + 1, 0);
  int64_t max_len = 0;
  for (int64_t i = 0; i < batch; ++i) {
    features[i] = Find(examples[i], name);
    int64_t n = features[i] ? CheckedSize(*features[i], spec.dtype, name, record_name(i)) : 0;
    splits[i + 1] = splits[i] + n;
    max_len = std::max(max_len, n);
  }
  if (spec.output == VarLenOutput::kRagged) {
    Tensor values(spec.dtype, Shape{splits[batch]});
    for (int64_t i = 0; i < batch; ++i) {
      if (features[i]) CopyValues<T>(*features[i], values, splits[i]);
    }
    out.values = std::move(values);
    out.row_splits = Tensor::FromVector(splits);
    return;
  }
  Tensor values(spec.dtype, Shape{batch, max_len});
  T pad = spec.padding_value.defined() ? spec.padding_value.scalar<T>() : T{};
  std::fill_n(values.data<T>(), batch * max_len, pad);
  for (int64_t i = 0; i < batch; ++i) {
    if (features[i]) CopyValues<T>(*features[i], values, i * max_len);
  }
  out.values = std::move(values);
}

void ValidateSpec(const ExampleSpec& spec) {
  for (const auto& [name, f] : spec.fixed) {
    CheckSpecDType(f.dtype, name, "FixedLenFeature");
    if (!f.shape.fully_defined()) {
      throw InvalidArgument("FixedLenFeature '", name, "' has shape ", f.shape,
                            "; it must be fully defined (use a VarLenFeature for "
                            "variable-length data)");
    }
    if (f.default_value) {
      const Tensor& d = *f.default_value;
      if (d.dtype() != f.dtype ||
          (d.NumElements() != 1 && d.NumElements() != f.shape.num_elements())) {
        throw InvalidArgument("FixedLenFeature '", name, "': default_value ",
                              d.DebugString(4), " does not fit dtype ", f.dtype, " shape ",
                              f.shape, "; give a scalar or ", f.shape.num_elements(),
                              " values of that dtype");
      }
    }
  }
  for (const auto& [name, f] : spec.var_len) {
    CheckSpecDType(f.dtype, name, "VarLenFeature");
    if (spec.fixed.count(name)) {
      throw InvalidArgument("feature '", name,
                            "' is listed both as FixedLenFeature and as VarLenFeature");
    }
    if (f.padding_value.defined() &&
        (f.padding_value.dtype() != f.dtype || f.padding_value.NumElements() != 1)) {
      throw InvalidArgument("VarLenFeature '", name, "': padding_value must be a scalar of ",
                            f.dtype, ", got ", f.padding_value.DebugString(4));
    }
  }
}

ParsedFeatures ParseProtos(const std::vector<proto::Example>& examples,
                           const ExampleSpec& spec, const RecordNameFn& record_name) {
  ValidateSpec(spec);
  ParsedFeatures out;
  auto dispatch = [](DType dtype, auto&& fn) {
    switch (dtype) {
      case DType::kFloat32: return fn(float{});
      case DType::kInt64: return fn(int64_t{});
      default: return fn(std::string{});
    }
  };
  for (const auto& [name, f] : spec.fixed) {
    dispatch(f.dtype, [&](auto tag) {
      ParseFixed<decltype(tag)>(examples, name, f, record_name, out[name]);
    });
  }
  for (const auto& [name, f] : spec.var_len) {
    dispatch(f.dtype, [&](auto tag) {
      ParseVarLen<decltype(tag)>(examples, name, f, record_name, out[name]);
    });
  }
  return out;
}

}  // namespace

proto::Example ParseExampleProto(std::string_view serialized, std::string_view record_name) {
  proto::Example ex;
  if (!ex.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
    throw DataLoss(record_name, " (", serialized.size(),
                   " bytes) is not a valid tf.train.Example; check that the file holds "
                   "Examples and that the compression type is right");
  }
  return ex;
}

ParsedFeatures ParseExample(std::string_view serialized, const ExampleSpec& spec,
                            std::string_view record_name) {
  std::vector<proto::Example> examples;
  examples.push_back(ParseExampleProto(serialized, record_name));
  ParsedFeatures out =
      ParseProtos(examples, spec, [&](size_t) { return std::string(record_name); });
  for (auto& [name, parsed] : out) {
    if (!parsed.row_splits.defined()) {
      parsed.values = parsed.values.Reshaped(parsed.values.shape().WithoutLeadingDim());
    }
  }
  return out;
}

ParsedFeatures ParseExampleBatch(std::span<const std::string> serialized,
                                 const ExampleSpec& spec,
                                 std::span<const std::string> record_names) {
  if (!record_names.empty() && record_names.size() != serialized.size()) {
    throw InvalidArgument("ParseExampleBatch: ", record_names.size(), " record names for ",
                          serialized.size(), " records");
  }
  auto name_of = [&](size_t i) {
    return record_names.empty() ? StrCat("record ", i, " of the batch") : record_names[i];
  };
  std::vector<proto::Example> examples;
  examples.reserve(serialized.size());
  for (size_t i = 0; i < serialized.size(); ++i) {
    examples.push_back(ParseExampleProto(serialized[i], name_of(i)));
  }
  return ParseProtos(examples, spec, name_of);
}

}  // namespace loom
