#include "loom/data/state_io.h"

#include <random>

namespace loom::data {

void StateWriter::WriteString(std::string_view s) {
  Write<uint64_t>(s.size());
  out_.append(s.data(), s.size());
}

void StateWriter::WriteTensor(const Tensor& t) {
  Write<int32_t>(static_cast<int32_t>(t.dtype()));
  Write<int32_t>(t.rank());
  for (int64_t d : t.shape().dims()) Write<int64_t>(d);
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.flat<std::string>()) WriteString(s);
  } else {
    out_.append(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  }
}

void StateWriter::WriteElement(const Element& e) {
  Write<uint64_t>(e.size());
  for (const auto& [name, t] : e) {
    WriteString(name);
    WriteTensor(t);
  }
}

void StateReader::Need(uint64_t n, std::string_view what) const {
  if (n > data_.size() - pos_) {
    throw DataLoss("iterator state is truncated or corrupt: reading ", what, " at byte ", pos_,
                   " needs ", n, " bytes but ", data_.size() - pos_, " remain");
  }
}

std::string StateReader::ReadString() {
  uint64_t n = Read<uint64_t>();
  Need(n, "a string");
  std::string s(data_.substr(pos_, n));
  pos_ += n;
  return s;
}

Tensor StateReader::ReadTensor() {
  int32_t dtype = Read<int32_t>();
  if (!IsValidDType(dtype)) throw DataLoss("iterator state is corrupt: bad dtype ", dtype);
  int32_t rank = Read<int32_t>();
  if (rank < 0 || rank > 64) throw DataLoss("iterator state is corrupt: bad rank ", rank);
  std::vector<int64_t> dims(rank);
  for (auto& d : dims) {
    d = Read<int64_t>();
    if (d < 0) throw DataLoss("iterator state is corrupt: negative dimension at byte ", pos_);
  }
  DType dt = static_cast<DType>(dtype);
  // Every element needs bytes of the blob (a string at least its 8-byte length), so the
  // blob's size bounds the count, checked without overflow before anything is allocated.
  const uint64_t element_bytes = dt == DType::kString ? 8 : DTypeSize(dt);
  const uint64_t remaining = data_.size() - pos_;
  const Shape shape(dims);
  const std::optional<int64_t> count =
      shape.NumElementsAtMost(element_bytes == 0 ? 0 : remaining / element_bytes);
  if (!count) {
    throw DataLoss("iterator state is truncated or corrupt: a tensor of shape ", shape.ToString(),
                   " and dtype ", DTypeName(dt), " at byte ", pos_, " needs more than the ",
                   remaining, " bytes that remain");
  }
  Tensor t(dt, shape);
  if (dt == DType::kString) {
    for (std::string& s : t.flat<std::string>()) s = ReadString();
  } else {
    std::memcpy(t.raw_data(), data_.data() + pos_, t.TotalBytes());
    pos_ += t.TotalBytes();
  }
  return t;
}

Element StateReader::ReadElement() {
  uint64_t n = Read<uint64_t>();
  Need(n, "an element");
  Element e;
  for (uint64_t i = 0; i < n; ++i) {
    std::string name = ReadString();
    e[name] = ReadTensor();
  }
  return e;
}

void StateReader::ExpectTag(std::string_view tag) {
  std::string got = ReadString();
  if (got != tag) {
    throw InvalidArgument("iterator state does not match this pipeline: expected state of '", tag,
                          "' but found '", got, "'");
  }
}

uint64_t MixSeed(uint64_t a, uint64_t b) {
  Rng rng(a ^ (b * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL));
  rng.Next();
  return rng.Next();
}

uint64_t RandomSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace loom::data
