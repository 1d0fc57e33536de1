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
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/io/proto/example.pb.h"
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

  const proto::Example& proto() const { return example_; }
  std::string Serialize() const;

 private:
  proto::Feature& Slot(const std::string& name);
  proto::Example example_;
};

}  // namespace loom

#endif  // LOOM_IO_EXAMPLE_BUILDER_H_
