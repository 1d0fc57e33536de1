// TensorFlow checkpoint reading (loom/io/tf_checkpoint.h, with its LevelDB table parser
// loom/io/sstable.h): Open (the table, its block checksums, the header and every entry),
// then every tensor and every part of a partitioned one. A bundle is two files, so the
// input is split: a 4-byte little-endian length n, then n bytes of the `.index` table,
// then the rest as the one data shard `.data-00000-of-00001`.
#include "fuzz/fuzz_util.h"
#include "loom/base/error.h"
#include "loom/io/tf_checkpoint.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  loom::fuzz::SilenceLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;
  if (size < 4) return 0;
  const uint32_t declared = data[0] | data[1] << 8 | data[2] << 16 | uint32_t{data[3]} << 24;
  const std::string_view rest = fuzz::AsView(data + 4, size - 4);
  const size_t index_size = std::min<size_t>(declared, rest.size());
  auto env = fuzz::EnvWithFile("/in/model.ckpt.index", rest.substr(0, index_size));
  {
    auto shard = env->NewWritableFile("/in/model.ckpt.data-00000-of-00001");
    shard->Append(rest.substr(index_size));
    shard->Close();
  }
  try {
    auto reader = TfCheckpointReader::Open(env.get(), "/in/model.ckpt");
    for (const TfCheckpointEntry& entry : reader->entries()) {
      try {
        Tensor t = reader->Get(entry.name);
        if (t.dtype() != kString) fuzz::TouchEveryByte(t.raw_data(), t.TotalBytes());
      } catch (const Error&) {
      }
      for (int part = 0; part < static_cast<int>(entry.slices.size()) && part < 8; ++part) {
        try {
          Tensor t = reader->GetPart(entry.name, part);
          if (t.dtype() != kString) fuzz::TouchEveryByte(t.raw_data(), t.TotalBytes());
        } catch (const Error&) {
        }
      }
    }
  } catch (const Error&) {
  }
  return 0;
}
