#include "loom/io/example.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <memory>
#include <unordered_map>

#include "loom/base/error.h"
#include "loom/io/example_proto.h"
#include "loom/io/example_wire.h"

namespace loom {
namespace {

using RecordNameFn = std::function<std::string(size_t)>;

std::string_view ListNameFor(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float_list";
    case DType::kInt64:
      return "int64_list";
    default:
      return "bytes_list";
  }
}

void CheckSpecDType(DType dtype, const std::string& name, std::string_view kind) {
  if (dtype != kFloat32 && dtype != kInt64 && dtype != kString) {
    throw InvalidArgument(kind, " '", name, "' has dtype ", dtype,
                          "; Example features hold float32, int64 or string");
  }
}

// How each record of a batch was read: the features of the spec found in it (slots),
// decoded straight from the record's bytes where example_wire.h accepts the record, or
// pointing into a proto::Example parsed by libprotobuf otherwise. Records and protos must
// outlive the slots.
class FoundFeatures {
 public:
  FoundFeatures(std::span<const std::string_view> records, const ExampleSpec& spec,
                const RecordNameFn& record_name) {
    for (const auto& [name, f] : spec.fixed) AddName(name);
    for (const auto& [name, f] : spec.var_len) AddName(name);
    slots_.resize(records.size() * names_.size());
    auto slot_of = [this](std::string_view key) { return SlotOf(key); };
    for (size_t i = 0; i < records.size(); ++i) {
      example_wire::FeatureSlot* row = slots_.data() + i * names_.size();
      if (example_wire::DecodeExample(records[i], slot_of, row)) continue;
      std::fill_n(row, names_.size(), example_wire::FeatureSlot{});
      protos_.push_back(
          std::make_unique<proto::Example>(ParseExampleProto(records[i], record_name(i))));
      for (const auto& [key, feature] : protos_.back()->features().feature()) {
        const int index = SlotOf(key);
        if (index >= 0) row[index] = FromProto(feature);
      }
    }
  }

  // Features of the spec in order: spec.fixed, then spec.var_len.
  const example_wire::FeatureSlot& at(size_t record, int feature) const {
    return slots_[record * names_.size() + feature];
  }

 private:
  void AddName(const std::string& name) {
    index_.emplace(name, static_cast<int>(names_.size()));
    names_.push_back(name);
  }
  int SlotOf(std::string_view key) const {
    auto it = index_.find(key);
    return it == index_.end() ? -1 : it->second;
  }
  static example_wire::FeatureSlot FromProto(const proto::Feature& f) {
    example_wire::FeatureSlot slot{.present = true, .proto = &f};
    switch (f.kind_case()) {
      case proto::Feature::kBytesList:
        slot.kind = example_wire::ListKind::kBytes;
        slot.count = f.bytes_list().value_size();
        break;
      case proto::Feature::kFloatList:
        slot.kind = example_wire::ListKind::kFloat;
        slot.count = f.float_list().value_size();
        break;
      case proto::Feature::kInt64List:
        slot.kind = example_wire::ListKind::kInt64;
        slot.count = f.int64_list().value_size();
        break;
      case proto::Feature::KIND_NOT_SET:
        break;
    }
    return slot;
  }

  std::vector<std::string_view> names_;
  std::unordered_map<std::string_view, int> index_;
  std::vector<example_wire::FeatureSlot> slots_;
  std::vector<std::unique_ptr<proto::Example>> protos_;
};

std::string_view KindName(example_wire::ListKind kind) {
  switch (kind) {
    case example_wire::ListKind::kBytes:
      return "bytes_list";
    case example_wire::ListKind::kFloat:
      return "float_list";
    case example_wire::ListKind::kInt64:
      return "int64_list";
    default:
      return "empty feature";
  }
}

// Number of values in f, after checking that its list type matches dtype.
int64_t CheckedSize(const example_wire::FeatureSlot& f, DType dtype, const std::string& name,
                    const RecordNameFn& record_name, size_t record) {
  using example_wire::ListKind;
  if (f.kind == ListKind::kNone || (f.kind == ListKind::kFloat && dtype == kFloat32) ||
      (f.kind == ListKind::kInt64 && dtype == kInt64) ||
      (f.kind == ListKind::kBytes && dtype == kString)) {
    return f.count;
  }
  throw InvalidArgument("feature '", name, "' in ", record_name(record), " is a ", KindName(f.kind),
                        " but the spec asks for ", dtype, " (a ", ListNameFor(dtype),
                        "); fix the dtype in the feature spec");
}

// Copies f's values (f.count of them, of the type CheckedSize allowed) to out.
template <typename T>
void CopyValues(const example_wire::FeatureSlot& f, T* out) {
  if (f.kind == example_wire::ListKind::kNone || f.count == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (f.proto != nullptr) {
      std::memcpy(out, f.proto->float_list().value().data(), f.count * sizeof(float));
    } else if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(out, f.data, f.count * sizeof(float));
    } else {
      for (int64_t j = 0; j < f.count; ++j) {
        uint32_t bits = 0;
        for (int b = 3; b >= 0; --b) bits = (bits << 8) | static_cast<uint8_t>(f.data[4 * j + b]);
        std::memcpy(out + j, &bits, 4);
      }
    }
  } else if constexpr (std::is_same_v<T, int64_t>) {
    if (f.proto != nullptr) {
      std::memcpy(out, f.proto->int64_list().value().data(), f.count * sizeof(int64_t));
    } else {
      example_wire::CopyWireInt64s(f, out);
    }
  } else {
    if (f.proto != nullptr) {
      const auto& values = f.proto->bytes_list().value();
      std::copy(values.begin(), values.end(), out);
    } else {
      example_wire::ForEachWireBytes(f, [&](std::string_view v) { (out++)->assign(v); });
    }
  }
}

template <typename T>
void ParseFixed(const FoundFeatures& found, size_t batch, int index, const std::string& name,
                const FixedLenFeature& spec, const RecordNameFn& record_name, ParsedFeature& out) {
  const int64_t per_record = spec.shape.num_elements();
  Tensor values(spec.dtype, spec.shape.WithLeadingDim(static_cast<int64_t>(batch)));
  T* dst = values.data<T>();
  for (size_t i = 0; i < batch; ++i) {
    const example_wire::FeatureSlot& f = found.at(i, index);
    if (!f.present) {
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
    const int64_t n = CheckedSize(f, spec.dtype, name, record_name, i);
    if (n != per_record) {
      throw InvalidArgument("feature '", name, "' in ", record_name(i), " has ", n,
                            " values but its FixedLenFeature shape ", spec.shape, " needs ",
                            per_record, "; use a VarLenFeature for variable-length data");
    }
    CopyValues<T>(f, dst + i * per_record);
  }
  out.values = std::move(values);
}

template <typename T>
void ParseVarLen(const FoundFeatures& found, size_t batch, int index, const std::string& name,
                 const VarLenFeature& spec, const RecordNameFn& record_name, ParsedFeature& out) {
  std::vector<int64_t> splits(batch + 1, 0);
  int64_t max_len = 0;
  for (size_t i = 0; i < batch; ++i) {
    const example_wire::FeatureSlot& f = found.at(i, index);
    const int64_t n = f.present ? CheckedSize(f, spec.dtype, name, record_name, i) : 0;
    splits[i + 1] = splits[i] + n;
    max_len = std::max(max_len, n);
  }
  if (spec.output == VarLenOutput::kRagged) {
    Tensor values(spec.dtype, Shape{splits[batch]});
    for (size_t i = 0; i < batch; ++i) {
      CopyValues<T>(found.at(i, index), values.data<T>() + splits[i]);
    }
    out.values = std::move(values);
    out.row_splits = Tensor::FromVector(splits);
    return;
  }
  const auto rows = static_cast<int64_t>(batch);
  Tensor values(spec.dtype, Shape{rows, max_len});
  T pad = spec.padding_value.defined() ? spec.padding_value.scalar<T>() : T{};
  std::fill_n(values.data<T>(), rows * max_len, pad);
  for (size_t i = 0; i < batch; ++i) {
    CopyValues<T>(found.at(i, index), values.data<T>() + i * max_len);
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
        throw InvalidArgument("FixedLenFeature '", name, "': default_value ", d.DebugString(4),
                              " does not fit dtype ", f.dtype, " shape ", f.shape,
                              "; give a scalar or ", f.shape.num_elements(),
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

ParsedFeatures ParseRecords(std::span<const std::string_view> records, const ExampleSpec& spec,
                            const RecordNameFn& record_name) {
  ValidateSpec(spec);
  const FoundFeatures found(records, spec, record_name);
  const size_t batch = records.size();
  ParsedFeatures out;
  auto dispatch = [](DType dtype, auto&& fn) {
    switch (dtype) {
      case DType::kFloat32:
        return fn(float{});
      case DType::kInt64:
        return fn(int64_t{});
      default:
        return fn(std::string{});
    }
  };
  int index = 0;
  // Named references, not structured bindings: clang 14 cannot capture bindings in lambdas.
  for (const auto& entry : spec.fixed) {
    const auto& name = entry.first;
    const auto& f = entry.second;
    dispatch(f.dtype, [&](auto tag) {
      ParseFixed<decltype(tag)>(found, batch, index, name, f, record_name, out[name]);
    });
    ++index;
  }
  for (const auto& entry : spec.var_len) {
    const auto& name = entry.first;
    const auto& f = entry.second;
    dispatch(f.dtype, [&](auto tag) {
      ParseVarLen<decltype(tag)>(found, batch, index, name, f, record_name, out[name]);
    });
    ++index;
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
  const std::string_view records[] = {serialized};
  ParsedFeatures out =
      ParseRecords(records, spec, [&](size_t) { return std::string(record_name); });
  for (auto& [name, parsed] : out) {
    if (!parsed.row_splits.defined()) {
      parsed.values = parsed.values.Reshaped(parsed.values.shape().WithoutLeadingDim());
    }
  }
  return out;
}

ParsedFeatures ParseExampleBatch(std::span<const std::string> serialized, const ExampleSpec& spec,
                                 std::span<const std::string> record_names) {
  if (!record_names.empty() && record_names.size() != serialized.size()) {
    throw InvalidArgument("ParseExampleBatch: ", record_names.size(), " record names for ",
                          serialized.size(), " records");
  }
  auto name_of = [&](size_t i) {
    return record_names.empty() ? StrCat("record ", i, " of the batch") : record_names[i];
  };
  std::vector<std::string_view> records(serialized.begin(), serialized.end());
  return ParseRecords(records, spec, name_of);
}

}  // namespace loom
