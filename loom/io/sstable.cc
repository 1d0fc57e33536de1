#include "loom/io/sstable.h"

#include <snappy.h>

#include <algorithm>
#include <cstring>

#include "loom/base/crc32c.h"
#include "loom/base/error.h"

namespace loom {
namespace {

// LevelDB's table magic number and footer layout: two BlockHandles (varint64 offset and
// size each, at most 10 + 10 bytes), zero padding to 40 bytes, the 8-byte magic.
constexpr uint64_t kTableMagic = 0xdb4775248b80fb57ull;
constexpr size_t kFooterSize = 48;
constexpr size_t kBlockTrailerSize = 5;  // compression type byte + masked crc32c
constexpr uint8_t kNoCompression = 0;
constexpr uint8_t kSnappyCompression = 1;

uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // the format is little-endian, as is every machine Loom targets
  return v;
}

uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// A varint of at most max_bytes bytes from [*p, end); false when truncated or too long.
bool GetVarint(const char** p, const char* end, uint64_t* value, int max_bytes) {
  uint64_t result = 0;
  for (int i = 0; i < max_bytes && *p < end; ++i) {
    const auto b = static_cast<uint8_t>(*(*p)++);
    result |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

struct BlockHandle {
  uint64_t offset = 0;
  uint64_t size = 0;
};

class TableParser {
 public:
  TableParser(std::string_view file, const std::string& name) : file_(file), name_(name) {}

  Sstable Parse() {
    if (file_.size() < kFooterSize) {
      throw DataLoss("table '", name_, "': ", file_.size(),
                     " bytes is shorter than the 48-byte LevelDB footer (truncated file?)");
    }
    const char* footer = file_.data() + file_.size() - kFooterSize;
    if (DecodeFixed64(footer + 40) != kTableMagic) {
      throw DataLoss("table '", name_, "': no LevelDB table magic number in the last 8 bytes (",
                     "offset ", file_.size() - 8, "); the file is truncated or not a table");
    }
    const char* p = footer;
    const char* end = footer + 40;
    const BlockHandle metaindex = DecodeHandle(&p, end, "footer", file_.size() - kFooterSize);
    const BlockHandle index = DecodeHandle(&p, end, "footer", file_.size() - kFooterSize);
    // Every writer zero-pads the footer (LevelDB's Footer::EncodeTo); LevelDB's reader does
    // not check, but a flipped padding byte is damage like any other.
    if (std::any_of(p, end, [](char c) { return c != 0; })) {
      throw DataLoss("table '", name_, "': the footer's padding (offset ",
                     file_.size() - kFooterSize + (p - footer), ") is not zero (damaged file)");
    }

    Sstable table;
    // The metaindex names optional filter blocks, which a full scan does not need; its
    // checksum is still verified, so damage anywhere in the file is reported.
    ReadBlock(metaindex, "metaindex", table);
    const std::string index_block = ReadBlock(index, "index", table);
    std::vector<SstableEntry> handles = DecodeBlock(index_block, index, "index");
    for (size_t i = 0; i < handles.size(); ++i) {
      const std::string role = "data#" + std::to_string(i);
      const char* q = handles[i].value.data();
      const char* q_end = q + handles[i].value.size();
      const BlockHandle handle = DecodeHandle(&q, q_end, "index entry", index.offset);
      const std::string contents = ReadBlock(handle, role, table);
      for (SstableEntry& entry : DecodeBlock(contents, handle, role)) {
        if (!table.entries.empty() && !(table.entries.back().key < entry.key)) {
          throw DataLoss("table '", name_, "': ", role, " block at offset ", handle.offset,
                         ": keys are not in increasing order (the file is damaged)");
        }
        if (entry.key > handles[i].key) {
          throw DataLoss("table '", name_, "': ", role, " block at offset ", handle.offset,
                         ": a key lies beyond its index entry's bound (the file is damaged)");
        }
        table.entries.push_back(std::move(entry));
      }
    }
    return table;
  }

 private:
  BlockHandle DecodeHandle(const char** p, const char* end, std::string_view where,
                           uint64_t offset) const {
    BlockHandle h;
    if (!GetVarint(p, end, &h.offset, 10) || !GetVarint(p, end, &h.size, 10)) {
      throw DataLoss("table '", name_, "': malformed block handle in the ", where, " at offset ",
                     offset, " (the file is damaged)");
    }
    return h;
  }

  // The block's contents after checking its trailer and undoing its compression.
  std::string ReadBlock(const BlockHandle& h, const std::string& role, Sstable& table) const {
    const uint64_t limit = file_.size() - kFooterSize;
    if (h.offset > limit || h.size > limit - h.offset ||
        kBlockTrailerSize > limit - h.offset - h.size) {
      throw DataLoss("table '", name_, "': ", role, " block [", h.offset, ", +", h.size,
                     ") lies outside the file's ", file_.size(), " bytes (truncated file?)");
    }
    const char* data = file_.data() + h.offset;
    const auto type = static_cast<uint8_t>(data[h.size]);
    const uint32_t stored = crc32c::Unmask(DecodeFixed32(data + h.size + 1));
    // The checksum covers the stored bytes and the type byte.
    const uint32_t actual = crc32c::Value(data, h.size + 1);
    if (stored != actual) {
      throw DataLoss("table '", name_, "': ", role, " block at offset ", h.offset, " (", h.size,
                     " bytes) fails its checksum (stored crc32c ", stored, ", computed ", actual,
                     "); the file is damaged, restore it from a copy");
    }
    table.blocks.push_back({role, h.offset, h.size, type == kSnappyCompression});
    if (type == kNoCompression) return std::string(data, h.size);
    if (type != kSnappyCompression) {
      throw DataLoss("table '", name_, "': ", role, " block at offset ", h.offset,
                     " has compression type ", int{type},
                     ", which is neither none (0) nor Snappy (1)");
    }
    auto bad_snappy = [&] {
      return DataLoss("table '", name_, "': ", role, " block at offset ", h.offset,
                      " is not valid Snappy data (the file is damaged)");
    };
    size_t length = 0;
    // A block's declared size is capped so a damaged length cannot ask for gigabytes.
    if (!snappy::GetUncompressedLength(data, h.size, &length) || length > (size_t{1} << 30)) {
      throw bad_snappy();
    }
    std::string out(length, '\0');
    if (!snappy::RawUncompress(data, h.size, out.data())) throw bad_snappy();
    return out;
  }

  // The entries of one block: prefix-compressed keys, then the restart array.
  std::vector<SstableEntry> DecodeBlock(const std::string& block, const BlockHandle& h,
                                        const std::string& role) const {
    auto fail = [&](std::string_view what) {
      return DataLoss("table '", name_, "': ", role, " block at offset ", h.offset, ": ", what,
                      " (the file is damaged)");
    };
    if (block.size() < 4) throw fail("shorter than its restart count");
    const uint64_t num_restarts = DecodeFixed32(block.data() + block.size() - 4);
    if (num_restarts == 0 || num_restarts > (block.size() - 4) / 4) {
      throw fail("restart count does not fit the block");
    }
    const size_t restarts_begin = block.size() - 4 - 4 * num_restarts;
    std::vector<bool> is_restart(restarts_begin + 1, false);
    for (uint64_t i = 0; i < num_restarts; ++i) {
      const uint32_t r = DecodeFixed32(block.data() + restarts_begin + 4 * i);
      if (r > restarts_begin ||
          (i > 0 && r <= DecodeFixed32(block.data() + restarts_begin + 4 * (i - 1)))) {
        throw fail("restart offsets are out of range or out of order");
      }
      is_restart[r] = true;
    }
    std::vector<SstableEntry> entries;
    const char* p = block.data();
    const char* end = block.data() + restarts_begin;
    std::string key;
    while (p < end) {
      const bool restart = is_restart[p - block.data()];
      uint64_t shared = 0, non_shared = 0, value_size = 0;
      if (!GetVarint(&p, end, &shared, 5) || !GetVarint(&p, end, &non_shared, 5) ||
          !GetVarint(&p, end, &value_size, 5)) {
        throw fail("truncated entry header");
      }
      if (shared > key.size() || (restart && shared != 0)) {
        throw fail("an entry shares more key bytes than the previous key has");
      }
      if (non_shared > static_cast<uint64_t>(end - p) ||
          value_size > static_cast<uint64_t>(end - p) - non_shared) {
        throw fail("an entry runs past the end of the block");
      }
      key.resize(shared);
      key.append(p, non_shared);
      p += non_shared;
      entries.push_back({key, std::string(p, value_size)});
      p += value_size;
    }
    if (!is_restart[0] && restarts_begin > 0) throw fail("the first entry is not a restart point");
    return entries;
  }

  std::string_view file_;
  const std::string& name_;
};

}  // namespace

Sstable ParseSstable(std::string_view file, const std::string& name) {
  return TableParser(file, name).Parse();
}

Sstable ReadSstable(Env* env, const std::string& path) {
  if (!env->FileExists(path)) throw NotFound("table '", path, "' does not exist");
  return ParseSstable(ReadFileToString(env, path), path);
}

}  // namespace loom
