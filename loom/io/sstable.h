#ifndef LOOM_IO_SSTABLE_H_
#define LOOM_IO_SSTABLE_H_

// A reader of LevelDB's immutable table format ("SSTable"), the container of TensorFlow's
// checkpoint `.index` files (docs/formats/tf_checkpoint.md). Read-only and whole-file: the
// index of a checkpoint is small (a few hundred bytes per tensor), and its users want every
// entry, so the table is read in one pass and returned as a sorted list; no seek, no block
// cache. Every block's masked CRC-32C trailer is checked, Snappy blocks are decompressed
// with libsnappy, and every length, offset, restart array and key order is validated:
// damage throws DataLoss naming the file, the block's offset and what is wrong, never reads
// out of bounds. Filter blocks named by the metaindex are checksummed but not used.
// Pure functions, thread-safe.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/base/env.h"

namespace loom {

struct SstableEntry {
  std::string key;
  std::string value;
};

// One block as the file stores it.
struct SstableBlock {
  std::string role;  // "metaindex", "index", "data#0", "data#1", ...
  uint64_t offset = 0;
  uint64_t size = 0;  // without the 5-byte trailer
  bool snappy = false;
};

struct Sstable {
  std::vector<SstableEntry> entries;  // in key order (bytewise, strictly increasing)
  std::vector<SstableBlock> blocks;   // metaindex, index, then the data blocks
};

// Parses a whole table held in memory; `name` (a path) goes into error messages.
Sstable ParseSstable(std::string_view file, const std::string& name);
// Reads the file through env and parses it. NotFound when it does not exist.
Sstable ReadSstable(Env* env, const std::string& path);

}  // namespace loom

#endif  // LOOM_IO_SSTABLE_H_
