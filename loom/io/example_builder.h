#ifndef LOOM_IO_EXAMPLE_BUILDER_H_
#define LOOM_IO_EXAMPLE_BUILDER_H_

// ExampleBuilder assembles one tf.train.Example (docs/formats/example.md) for writing to
// a TFRecord file:
//
//   std::string record = ExampleBuilder()
//                            .AddInt64s("label", {3})
//                            .AddFloats("pixels", pixels)
//                            .AddBytes("id", {"img_0001"})
//                            .Serialize();
//
// Adding a name twice replaces the earlier value. A value type; not thread-safe.
// Serialization is deterministic (map keys sorted), so equal builders give equal bytes.
// The message itself (ToExampleProto) is in example_proto.h, for Loom's own code.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom {

class ExampleBuilder {
 public:
  ExampleBuilder& AddFloats(const std::string& name, const std::vector<float>& values);
  ExampleBuilder& AddInt64s(const std::string& name, const std::vector<int64_t>& values);
  ExampleBuilder& AddBytes(const std::string& name, const std::vector<std::string>& values);
  // Flattens t row-major: float32 -> float_list; int64, int32, uint8, bool -> int64_list;
  // string -> bytes_list. Throws InvalidArgument naming the feature for other dtypes.
  ExampleBuilder& AddTensor(const std::string& name, const Tensor& t);

  // One feature's values: an Example's float_list, int64_list or bytes_list.
  using Values = std::variant<std::vector<float>, std::vector<int64_t>, std::vector<std::string>>;
  // The features added so far, by name.
  const std::map<std::string, Values>& features() const { return features_; }

  std::string Serialize() const;

 private:
  std::map<std::string, Values> features_;
};

}  // namespace loom

#endif  // LOOM_IO_EXAMPLE_BUILDER_H_
