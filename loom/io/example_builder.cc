#include "loom/io/example_builder.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "loom/base/error.h"
#include "loom/io/example_proto.h"

namespace loom {

ExampleBuilder& ExampleBuilder::AddFloats(const std::string& name,
                                          const std::vector<float>& values) {
  features_[name] = values;
  return *this;
}

ExampleBuilder& ExampleBuilder::AddInt64s(const std::string& name,
                                          const std::vector<int64_t>& values) {
  features_[name] = values;
  return *this;
}

ExampleBuilder& ExampleBuilder::AddBytes(const std::string& name,
                                         const std::vector<std::string>& values) {
  features_[name] = values;
  return *this;
}

ExampleBuilder& ExampleBuilder::AddTensor(const std::string& name, const Tensor& t) {
  switch (t.dtype()) {
    case DType::kFloat32: {
      auto v = t.flat<float>();
      return AddFloats(name, std::vector<float>(v.begin(), v.end()));
    }
    case DType::kString: {
      auto v = t.flat<std::string>();
      return AddBytes(name, std::vector<std::string>(v.begin(), v.end()));
    }
    case DType::kInt64:
    case DType::kInt32:
    case DType::kUInt8:
    case DType::kBool: {
      std::vector<int64_t> out;
      out.reserve(t.NumElements());
      SwitchAll(t.dtype(), "ExampleBuilder::AddTensor", [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, bool>) {
          const bool* p = static_cast<const bool*>(t.raw_data());
          for (int64_t i = 0; i < t.NumElements(); ++i) out.push_back(p[i] ? 1 : 0);
        } else if constexpr (std::is_integral_v<T>) {
          for (T v : t.flat<T>()) out.push_back(static_cast<int64_t>(v));
        }
      });
      return AddInt64s(name, out);
    }
    default:
      throw InvalidArgument("feature '", name, "': cannot store a ", t.dtype(),
                            " tensor in an Example; convert it to float32, int64 or string");
  }
}

proto::Example ToExampleProto(const ExampleBuilder& builder) {
  proto::Example example;
  auto& features = *example.mutable_features()->mutable_feature();
  for (const auto& [name, values] : builder.features()) {
    proto::Feature& f = features[name];
    if (const auto* floats = std::get_if<std::vector<float>>(&values)) {
      f.mutable_float_list()->mutable_value()->Add(floats->begin(), floats->end());
    } else if (const auto* ints = std::get_if<std::vector<int64_t>>(&values)) {
      f.mutable_int64_list()->mutable_value()->Add(ints->begin(), ints->end());
    } else {
      for (const std::string& v : std::get<std::vector<std::string>>(values)) {
        f.mutable_bytes_list()->add_value(v);
      }
    }
  }
  return example;
}

std::string ExampleBuilder::Serialize() const {
  const proto::Example example = ToExampleProto(*this);
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    example.SerializeToCodedStream(&coded);
  }  // the streams trim `out` to the bytes written when they go away
  return out;
}

}  // namespace loom
