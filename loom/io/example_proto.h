#ifndef LOOM_IO_EXAMPLE_PROTO_H_
#define LOOM_IO_EXAMPLE_PROTO_H_

// The libprotobuf side of example.h and example_builder.h, for Loom's own code that holds
// a proto::Example itself (TF SavedModel inputs, tests, fuzzers, benchmarks). Internal to
// Loom: not installed, so no public header exposes a protobuf type.
#include <string_view>

#include "loom/io/example.h"
#include "loom/io/example_builder.h"
#include "loom/io/proto/example.pb.h"

namespace loom {

// Parses the proto itself; throws DataLoss naming record_name when it is not an Example.
proto::Example ParseExampleProto(std::string_view serialized,
                                 std::string_view record_name = "the example");

// The Example `builder` holds, as the message Serialize() encodes.
proto::Example ToExampleProto(const ExampleBuilder& builder);

}  // namespace loom

#endif  // LOOM_IO_EXAMPLE_PROTO_H_
