#ifndef LOOM_DATA_STATE_IO_H_
#define LOOM_DATA_STATE_IO_H_

// The binary encoding of iterator state (Iterator::Save/Restore) and of elements written
// by a file Cache: little-endian fixed-width integers, length-prefixed strings, tensors as
// dtype + shape + bytes. StateReader checks every length against what is left and throws
// DataLoss naming what it was reading, so a truncated or corrupt blob never crashes.
// Also the pipeline's random number generator (SplitMix64: one 64-bit word of state, so
// saving it is trivial). Not thread-safe.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "loom/base/error.h"
#include "loom/data/element.h"

namespace loom::data {

class StateWriter {
 public:
  template <typename T>
  requires std::is_trivially_copyable_v<T>
  void Write(const T& value) { out_.append(reinterpret_cast<const char*>(&value), sizeof(T)); }
  void WriteString(std::string_view s);
  void WriteTensor(const Tensor& t);
  void WriteElement(const Element& e);
  // A tag checked by StateReader::ExpectTag: catches state restored into another pipeline.
  void WriteTag(std::string_view tag) { WriteString(tag); }

  std::string& data() { return out_; }

 private:
  std::string out_;
};

class StateReader {
 public:
  explicit StateReader(std::string_view data) : data_(data) {}

  template <typename T>
  requires std::is_trivially_copyable_v<T> T Read() {
    Need(sizeof(T), "a number");
    T value;
    std::memcpy(&value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  std::string ReadString();
  Tensor ReadTensor();
  Element ReadElement();
  // Throws InvalidArgument when the next tag is not `tag`.
  void ExpectTag(std::string_view tag);

  bool AtEnd() const { return pos_ == data_.size(); }
  size_t position() const { return pos_; }

 private:
  void Need(uint64_t n, std::string_view what) const;
  std::string_view data_;
  size_t pos_ = 0;
};

// SplitMix64 (Steele et al. 2014): fast, 64 bits of state, good enough for shuffling.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) by Lemire's multiply-shift. REQUIRES: n > 0.
  uint64_t Uniform(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  uint64_t state() const { return state_; }
  void set_state(uint64_t s) { state_ = s; }

 private:
  uint64_t state_;
};

// Mixes two words into a seed (for per-epoch and per-stage seeds).
uint64_t MixSeed(uint64_t a, uint64_t b);
// A nondeterministic seed (std::random_device), for pipelines built without one.
uint64_t RandomSeed();

}  // namespace loom::data

#endif  // LOOM_DATA_STATE_IO_H_
