// TFRecord framing (loom/io/record_reader.h) under one compression, chosen at build time
// (fuzz_tfrecord, fuzz_tfrecord_gzip, fuzz_tfrecord_zlib). The input is the file's bytes.
// Three reads: strict (DataLoss on the first bad record), skipping corrupt records with a
// truncated tail as end of file, and a Seek back to each record boundary seen.
#include <vector>

#include "fuzz/fuzz_util.h"
#include "loom/base/error.h"
#include "loom/io/record_reader.h"

namespace {
constexpr loom::Compression kCompression = loom::Compression::LOOM_FUZZ_COMPRESSION;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  loom::fuzz::SilenceLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loom;
  auto env = fuzz::EnvWithFile("/in/file.tfrecord", fuzz::AsView(data, size));
  std::string record;
  std::vector<uint64_t> offsets;
  try {
    // A small buffer makes records straddle buffer refills.
    auto reader = RecordReader::Open(env.get(), "/in/file.tfrecord",
                                     {.compression = kCompression, .buffer_size = 64});
    offsets.push_back(reader->offset());
    while (reader->ReadRecord(&record)) offsets.push_back(reader->offset());
  } catch (const Error&) {
  }
  try {
    auto reader = RecordReader::Open(env.get(), "/in/file.tfrecord",
                                     {.compression = kCompression,
                                      .skip_corrupt_records = true,
                                      .truncated_record_is_eof = true,
                                      .buffer_size = 37});
    while (reader->ReadRecord(&record)) {
    }
    // Backwards to each boundary the strict pass accepted.
    for (auto it = offsets.rbegin(); it != offsets.rend(); ++it) {
      reader->Seek(*it);
      reader->ReadRecord(&record);
    }
  } catch (const Error&) {
  }
  try {
    auto reader =
        RecordReader::OpenSequential(env.get(), "/in/file.tfrecord", {.compression = kCompression});
    while (reader->ReadRecord(&record)) {
    }
  } catch (const Error&) {
  }
  return 0;
}
