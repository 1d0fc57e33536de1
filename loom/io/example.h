#ifndef LOOM_IO_EXAMPLE_H_
#define LOOM_IO_EXAMPLE_H_

// Parsing tf.train.Example records (docs/formats/example.md) into Tensors, driven by a
// spec in the style of tf.io.parse_example:
//
//   ExampleSpec spec;
//   spec.fixed["label"] = {.dtype = kInt64};                         // scalar
//   spec.fixed["image"] = {.dtype = kFloat32, .shape = {28, 28}};
//   spec.var_len["words"] = {.dtype = kString};                      // ragged
//   ParsedFeatures out = ParseExampleBatch(records, spec);
//   out["image"].values  -> float32 [batch, 28, 28]
//   out["words"].values  -> string [total words], out["words"].row_splits -> int64 [batch+1]
//
// Feature dtypes map to the Example lists: kFloat32 <-> float_list, kInt64 <-> int64_list,
// kString <-> bytes_list. Features in a record but not in the spec are ignored. A feature
// with no list set counts as an empty list of any type.
//
// Errors throw InvalidArgument naming the feature and the record ("feature 'label' is
// missing from record 3 of 'train.tfrecord' and its FixedLenFeature has no default"):
// a missing fixed-length feature without a default, a list of the wrong type or length,
// an unsupported dtype. A record that is not a valid Example throws DataLoss.
// Stateless functions; thread-safe. No protobuf type appears here: the libprotobuf API
// (ParseExampleProto) is in example_proto.h, for Loom's own code.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/tensor/tensor.h"

namespace loom {

struct FixedLenFeature {
  // kFloat32, kInt64 or kString. Default: kFloat32.
  DType dtype = kFloat32;
  // Fully defined; the feature must hold exactly shape.num_elements() values, in row-major
  // order. Default: scalar.
  Shape shape = Shape();
  // Used when the feature is missing: a tensor of dtype with the shape's element count,
  // or a scalar that fills the shape. Default: none (a missing feature is an error).
  std::optional<Tensor> default_value = std::nullopt;
};

enum class VarLenOutput {
  // Flat values of all records plus int64 row_splits (record i owns values
  // [row_splits[i], row_splits[i+1])), like tf.RaggedTensor.
  kRagged,
  // A dense [batch, max_length] tensor (or [max_length] for one record), short rows
  // filled with padding_value, like tf.sparse.to_dense of a VarLenFeature.
  kPadded,
};

struct VarLenFeature {
  // kFloat32, kInt64 or kString. Default: kFloat32.
  DType dtype = kFloat32;
  // Default: kRagged.
  VarLenOutput output = VarLenOutput::kRagged;
  // Scalar of dtype filling short rows of kPadded output. Default: undefined, meaning 0
  // or the empty string.
  Tensor padding_value = Tensor();
};

struct ExampleSpec {
  std::map<std::string, FixedLenFeature> fixed;
  std::map<std::string, VarLenFeature> var_len;
};

struct ParsedFeature {
  Tensor values;
  // Only for VarLenOutput::kRagged: int64 [batch + 1] ([2] for a single record).
  Tensor row_splits;
};
using ParsedFeatures = std::map<std::string, ParsedFeature>;

// Parses one serialized Example. Output shapes: fixed -> shape; var_len ragged ->
// values [n] and row_splits [0, n]; var_len padded -> [n]. `record_name` (e.g.
// "record 3 of 'train.tfrecord'") appears in error messages.
ParsedFeatures ParseExample(std::string_view serialized, const ExampleSpec& spec,
                            std::string_view record_name = "the example");

// Parses a batch. Output shapes: fixed -> [batch] + shape; ragged -> values [total] and
// row_splits [batch + 1]; padded -> [batch, max_n]. `record_names`, when not empty, has
// one name per record for error messages; otherwise records are called "record i of the
// batch".
ParsedFeatures ParseExampleBatch(std::span<const std::string> serialized, const ExampleSpec& spec,
                                 std::span<const std::string> record_names = {});

}  // namespace loom

#endif  // LOOM_IO_EXAMPLE_H_
