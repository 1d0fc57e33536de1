#ifndef LOOM_IO_EXAMPLE_WIRE_H_
#define LOOM_IO_EXAMPLE_WIRE_H_

// Internal to loom/io (example.cc): a decoder of the tf.train.Example wire format that
// finds the features a spec asks for without building proto::Example messages (no map,
// no per-feature allocation). Values stay in the record's bytes; example.cc copies them
// into the output tensors.
//
// It accepts a record only where its reading is certain to equal libprotobuf's: each
// field that protobuf would merge when repeated appears at most once (Example.features,
// a map entry's key and value, a Feature's list, a packed numeric list), no feature of the
// spec appears twice, keys are ASCII (proto3 checks string fields for UTF-8), numeric lists
// are packed, and there are no unknown fields. For anything else, malformed bytes
// included, DecodeExample returns false and the caller parses that record with
// libprotobuf, which decides what it means or names the error. TensorFlow, Beam and Loom
// writers all produce the accepted form.
//
// Stateless functions; thread-safe.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "loom/io/proto/feature.pb.h"

namespace loom::example_wire {

enum class ListKind : uint8_t { kNone, kBytes, kFloat, kInt64 };

// One feature of one record, as found.
struct FeatureSlot {
  bool present = false;
  ListKind kind = ListKind::kNone;
  int64_t count = 0;
  // Decoded from the wire: kFloat -> `count` little-endian floats at data; kInt64 ->
  // `count` varints in [data, data + size); kBytes -> the BytesList message's bytes.
  const char* data = nullptr;
  size_t size = 0;
  // Parsed by libprotobuf instead (the record was not in the accepted form).
  const proto::Feature* proto = nullptr;
};

namespace detail {

// Wire tags (field << 3 | wire type) of the accepted form: field 1, 2 or 3, length-delimited.
constexpr uint8_t kField1 = 0x0a, kField2 = 0x12, kField3 = 0x1a;

// A varint of at most max_bytes bytes. False when truncated or longer; for 10 bytes, also
// when the last byte holds bits past the 64th (left to libprotobuf).
inline bool ReadVarint(const char*& p, const char* end, uint64_t* value, int max_bytes) {
  uint64_t result = 0;
  for (int i = 0; i < max_bytes; ++i) {
    if (p == end) return false;
    const auto b = static_cast<uint8_t>(*p++);
    if (i == 9 && b > 1) return false;
    result |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

// The payload of a length-delimited field whose tag has been read.
inline bool ReadPayload(const char*& p, const char* end, std::string_view* out) {
  uint64_t n = 0;
  if (!ReadVarint(p, end, &n, 5) || n > static_cast<uint64_t>(end - p)) return false;
  *out = std::string_view(p, n);
  p += n;
  return true;
}

// A numeric list message: empty, or one packed field 1. Sets *packed to its payload.
inline bool ReadPackedList(std::string_view list, std::string_view* packed) {
  *packed = {};
  if (list.empty()) return true;
  const char* p = list.data();
  const char* end = p + list.size();
  return static_cast<uint8_t>(*p++) == kField1 && ReadPayload(p, end, packed) && p == end;
}

// Checks a Feature message and, when slot is not null, records where its values are.
inline bool DecodeFeature(std::string_view feature, FeatureSlot* slot) {
  const char* p = feature.data();
  const char* end = p + feature.size();
  ListKind kind = ListKind::kNone;
  std::string_view list;
  while (p < end) {
    const auto tag = static_cast<uint8_t>(*p++);
    if (kind != ListKind::kNone) return false;  // a second list: protobuf merges or replaces
    if (tag == kField1) {
      kind = ListKind::kBytes;
    } else if (tag == kField2) {
      kind = ListKind::kFloat;
    } else if (tag == kField3) {
      kind = ListKind::kInt64;
    } else {
      return false;
    }
    if (!ReadPayload(p, end, &list)) return false;
  }
  int64_t count = 0;
  const char* data = list.data();
  size_t size = list.size();
  if (kind == ListKind::kBytes) {
    const char* q = list.data();
    const char* list_end = q + list.size();
    std::string_view value;
    while (q < list_end) {
      if (static_cast<uint8_t>(*q++) != kField1 || !ReadPayload(q, list_end, &value)) return false;
      ++count;
    }
  } else if (kind == ListKind::kFloat) {
    std::string_view packed;
    if (!ReadPackedList(list, &packed) || packed.size() % 4 != 0) return false;
    count = static_cast<int64_t>(packed.size() / 4);
    data = packed.data();
    size = packed.size();
  } else if (kind == ListKind::kInt64) {
    std::string_view packed;
    if (!ReadPackedList(list, &packed)) return false;
    const char* q = packed.data();
    const char* packed_end = q + packed.size();
    uint64_t v = 0;
    while (q < packed_end) {
      if (!ReadVarint(q, packed_end, &v, 10)) return false;
      ++count;
    }
    data = packed.data();
    size = packed.size();
  }
  if (slot != nullptr) {
    slot->present = true;
    slot->kind = kind;
    slot->count = count;
    slot->data = data;
    slot->size = size;
  }
  return true;
}

}  // namespace detail

// Decodes one serialized Example. slot_of(std::string_view key) returns the index in
// `slots` of a feature the caller wants, or -1. Returns false when the record is not in
// the accepted form (see above); `slots` may then be partly filled and must be reset.
template <typename SlotOf>
bool DecodeExample(std::string_view record, const SlotOf& slot_of, FeatureSlot* slots) {
  using detail::kField1;
  using detail::kField2;
  const char* p = record.data();
  const char* end = p + record.size();
  bool seen_features = false;
  while (p < end) {
    std::string_view features;
    if (static_cast<uint8_t>(*p++) != kField1 || seen_features ||
        !detail::ReadPayload(p, end, &features)) {
      return false;
    }
    seen_features = true;
    const char* q = features.data();
    const char* features_end = q + features.size();
    while (q < features_end) {
      std::string_view entry;
      if (static_cast<uint8_t>(*q++) != kField1 || !detail::ReadPayload(q, features_end, &entry)) {
        return false;
      }
      const char* r = entry.data();
      const char* entry_end = r + entry.size();
      std::string_view key, value;
      bool has_key = false, has_value = false;
      while (r < entry_end) {
        const auto tag = static_cast<uint8_t>(*r++);
        if (tag == kField1 && !has_key) {
          has_key = detail::ReadPayload(r, entry_end, &key);
          if (!has_key) return false;
        } else if (tag == kField2 && !has_value) {
          has_value = detail::ReadPayload(r, entry_end, &value);
          if (!has_value) return false;
        } else {
          return false;
        }
      }
      if (!has_key || !has_value) return false;
      for (char c : key) {
        if (static_cast<uint8_t>(c) >= 0x80) return false;
      }
      const int index = slot_of(key);
      FeatureSlot* slot = index >= 0 ? &slots[index] : nullptr;
      if (slot != nullptr && slot->present) return false;  // a repeated key: the last wins
      if (!detail::DecodeFeature(value, slot)) return false;
    }
  }
  return true;
}

// The int64 values of a kInt64 slot decoded from the wire, written to out[0, count).
inline void CopyWireInt64s(const FeatureSlot& slot, int64_t* out) {
  const char* p = slot.data;
  const char* end = p + slot.size;
  uint64_t v = 0;
  while (p < end) {
    detail::ReadVarint(p, end, &v, 10);  // checked by DecodeExample
    *out++ = static_cast<int64_t>(v);
  }
}

// Calls fn(std::string_view) for each value of a kBytes slot decoded from the wire.
template <typename Fn>
void ForEachWireBytes(const FeatureSlot& slot, const Fn& fn) {
  const char* p = slot.data;
  const char* end = p + slot.size;
  std::string_view value;
  while (p < end) {
    ++p;  // the tag, checked by DecodeExample
    detail::ReadPayload(p, end, &value);
    fn(value);
  }
}

}  // namespace loom::example_wire

#endif  // LOOM_IO_EXAMPLE_WIRE_H_
