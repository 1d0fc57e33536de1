// tf.train.Example parsing (loom/io/example.h) on both decoding paths, and a differential
// check between them: whenever the fast wire decoder (loom/io/example_wire.h) accepts a
// record, libprotobuf must accept it too and find the same features with the same values.
// The input is one serialized record; the batch parse splits it in two at its first byte.
#include <cstring>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "loom/base/check.h"
#include "loom/base/error.h"
#include "loom/io/example_proto.h"
#include "loom/io/example_wire.h"

namespace {

using namespace loom;
namespace wire = loom::example_wire;

// The keys the seeds use (fuzz/corpus/example/).
constexpr const char* kKeys[] = {"f", "i", "s", "v", "label"};
constexpr int kNumKeys = sizeof(kKeys) / sizeof(kKeys[0]);

int SlotOf(std::string_view key) {
  for (int k = 0; k < kNumKeys; ++k) {
    if (key == kKeys[k]) return k;
  }
  return -1;
}

wire::ListKind KindOf(const proto::Feature& f) {
  switch (f.kind_case()) {
    case proto::Feature::kBytesList:
      return wire::ListKind::kBytes;
    case proto::Feature::kFloatList:
      return wire::ListKind::kFloat;
    case proto::Feature::kInt64List:
      return wire::ListKind::kInt64;
    default:
      return wire::ListKind::kNone;
  }
}

// Aborts (a crash for libFuzzer) when the wire decoder's reading differs from protobuf's.
void CompareWithProto(std::string_view record, const wire::FeatureSlot* slots) {
  proto::Example example;
  try {
    example = ParseExampleProto(record, "the fuzzed record");
  } catch (const Error& e) {
    LOOM_CHECK(false) << "the wire decoder accepted a record libprotobuf rejects: " << e.what();
  }
  const auto& features = example.features().feature();
  for (int k = 0; k < kNumKeys; ++k) {
    const wire::FeatureSlot& slot = slots[k];
    auto it = features.find(kKeys[k]);
    LOOM_CHECK_EQ(slot.present, it != features.end()) << "feature " << kKeys[k];
    if (!slot.present) continue;
    const proto::Feature& f = it->second;
    LOOM_CHECK(slot.kind == KindOf(f)) << "feature " << kKeys[k];
    if (slot.kind == wire::ListKind::kFloat) {
      LOOM_CHECK_EQ(slot.count, f.float_list().value_size());
      for (int64_t j = 0; j < slot.count; ++j) {
        float v;
        std::memcpy(&v, slot.data + 4 * j, 4);
        const float w = f.float_list().value(static_cast<int>(j));
        LOOM_CHECK(std::memcmp(&v, &w, 4) == 0) << "float " << j << " of " << kKeys[k];
      }
    } else if (slot.kind == wire::ListKind::kInt64) {
      LOOM_CHECK_EQ(slot.count, f.int64_list().value_size());
      std::vector<int64_t> values(slot.count);
      wire::CopyWireInt64s(slot, values.data());
      for (int64_t j = 0; j < slot.count; ++j) {
        LOOM_CHECK_EQ(values[j], f.int64_list().value(static_cast<int>(j)));
      }
    } else if (slot.kind == wire::ListKind::kBytes) {
      LOOM_CHECK_EQ(slot.count, f.bytes_list().value_size());
      int j = 0;
      wire::ForEachWireBytes(slot, [&](std::string_view v) {
        LOOM_CHECK(v == f.bytes_list().value(j)) << "bytes " << j << " of " << kKeys[k];
        ++j;
      });
    }
  }
}

ExampleSpec MakeSpec(bool defaults) {
  ExampleSpec spec;
  spec.fixed["f"] = {.dtype = kFloat32, .shape = Shape{2}};
  spec.fixed["label"] = {.dtype = kInt64};
  if (defaults) {
    spec.fixed["f"].default_value = Tensor::Scalar(0.5f);
    spec.fixed["label"].default_value = Tensor::Scalar(int64_t{-1});
  }
  spec.var_len["i"] = {.dtype = kInt64, .output = VarLenOutput::kPadded};
  spec.var_len["s"] = {.dtype = kString};
  spec.var_len["v"] = {.dtype = kFloat32};
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::SilenceLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view record = fuzz::AsView(data, size);
  wire::FeatureSlot slots[kNumKeys];
  if (wire::DecodeExample(record, SlotOf, slots)) CompareWithProto(record, slots);

  try {
    ParseExample(record, MakeSpec(false));
  } catch (const Error&) {
  }
  try {
    ParseExample(record, MakeSpec(true));
  } catch (const Error&) {
  }
  const size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  const std::vector<std::string> batch = {std::string(record.substr(0, cut)),
                                          std::string(record.substr(cut)), std::string(record)};
  try {
    ParseExampleBatch(batch, MakeSpec(true));
  } catch (const Error&) {
  }
  return 0;
}
