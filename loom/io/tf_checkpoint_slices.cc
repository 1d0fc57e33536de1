// Partitioned tensors of a TF bundle: the OrderedCode keys of slice entries and the
// reassembly of a full tensor from its slices (docs/formats/tf_checkpoint.md).
#include <algorithm>
#include <bit>
#include <cstring>

#include "loom/base/error.h"
#include "loom/io/tf_checkpoint.h"

namespace loom {
namespace {

void AppendOrderedString(std::string& out, std::string_view s) {
  for (char c : s) {
    if (c == '\0') {
      out += std::string_view("\x00\xff", 2);
    } else if (c == '\xff') {
      out += std::string_view("\xff\x00", 2);
    } else {
      out += c;
    }
  }
  out += std::string_view("\x00\x01", 2);
}

void AppendOrderedNum(std::string& out, uint64_t v) {
  char buf[8];
  int len = 0;
  for (; v > 0; v >>= 8) buf[7 - len++] = static_cast<char>(v & 0xff);
  out += static_cast<char>(len);
  out.append(buf + 8 - len, len);
}

// OrderedCode's signed encoding: a sign bit, then as many length bits as bytes follow
// (n bytes hold [-2^(7n-1), 2^(7n-1))), then the value's two's-complement bits.
void AppendOrderedSignedNum(std::string& out, int64_t v) {
  const uint64_t x = v < 0 ? ~static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (x < 64) {
    out += static_cast<char>(0x80 ^ static_cast<uint8_t>(v));
    return;
  }
  static constexpr uint8_t kHeader[11][2] = {{0, 0},    {0x80, 0},    {0xc0, 0},   {0xe0, 0},
                                             {0xf0, 0}, {0xf8, 0},    {0xfc, 0},   {0xfe, 0},
                                             {0xff, 0}, {0xff, 0x80}, {0xff, 0xc0}};
  const int bits = std::bit_width(x);  // floor(log2 x) + 1
  const int len = (bits + 7) / 7;
  uint8_t buf[10];
  const uint8_t sign = v < 0 ? 0xff : 0x00;
  buf[0] = buf[1] = sign;
  for (int i = 0; i < 8; ++i)
    buf[2 + i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (56 - 8 * i));
  uint8_t* begin = buf + 10 - len;
  begin[0] ^= kHeader[len][0];
  begin[1] ^= kHeader[len][1];
  out.append(reinterpret_cast<const char*>(begin), len);
}

std::string DescribeSlice(const TfSlice& slice) {
  std::string s;
  for (size_t d = 0; d < slice.size(); ++d) {
    if (d > 0) s += ':';
    s += slice[d].length < 0 ? "-" : StrCat(slice[d].start, ",", slice[d].length);
  }
  return s;
}

// Copies `src` (a slice's values) into `dst` at per-dimension offsets `starts`.
void CopyIntoSlice(const Tensor& src, const std::vector<int64_t>& starts, Tensor& dst) {
  const int rank = dst.rank();
  if (src.NumElements() == 0) return;
  const int64_t inner = rank == 0 ? 1 : src.dim(rank - 1);
  const int64_t rows = src.NumElements() / inner;
  std::vector<int64_t> stride(rank, 1);
  for (int d = rank - 2; d >= 0; --d) stride[d] = stride[d + 1] * dst.dim(d + 1);
  std::vector<int64_t> index(rank, 0);  // the source row's index over dims [0, rank - 1)
  const bool strings = dst.dtype() == DType::kString;
  const size_t element = strings ? 0 : DTypeSize(dst.dtype());
  for (int64_t row = 0; row < rows; ++row) {
    int64_t at = rank == 0 ? 0 : starts[rank - 1];
    for (int d = 0; d + 1 < rank; ++d) at += (index[d] + starts[d]) * stride[d];
    if (strings) {
      const std::string* from = src.data<std::string>() + row * inner;
      std::copy(from, from + inner, dst.data<std::string>() + at);
    } else {
      std::memcpy(static_cast<char*>(dst.raw_data()) + at * element,
                  static_cast<const char*>(src.raw_data()) + row * inner * element,
                  inner * element);
    }
    for (int d = rank - 2; d >= 0; --d) {
      if (++index[d] < src.dim(d)) break;
      index[d] = 0;
    }
  }
}

}  // namespace

std::string TfSliceKey(std::string_view name, const TfSlice& slice) {
  std::string key;
  AppendOrderedNum(key, 0);  // every slice key starts with 0, so it sorts before any name
  AppendOrderedString(key, name);
  AppendOrderedNum(key, slice.size());
  for (const TfSliceExtent& e : slice) {
    AppendOrderedSignedNum(key, e.start);
    AppendOrderedSignedNum(key, e.length);
  }
  return key;
}

Tensor TfCheckpointReader::GetPart(const std::string& name, int part) const {
  const TfCheckpointEntry& e = Entry(name);
  CheckReadable(e);
  if (part < 0 || part >= static_cast<int>(e.slices.size())) {
    throw NotFound("TF checkpoint '", prefix_, "': tensor '", name, "' ", e.shape.ToString(),
                   e.slices.empty() ? std::string(" is not partitioned")
                                    : StrCat(" has ", e.slices.size(), " parts"),
                   ", so there is no part ", part, " ('", name, "/part_", part, "')");
  }
  // TF numbers the parts along the partitioned axis, which is the order of their offsets.
  std::vector<const TfSlice*> order;
  for (const TfSlice& s : e.slices) order.push_back(&s);
  auto starts = [](const TfSlice* s) {
    std::vector<int64_t> v;
    for (const TfSliceExtent& x : *s) v.push_back(x.start);
    return v;
  };
  std::sort(order.begin(), order.end(),
            [&](const TfSlice* a, const TfSlice* b) { return starts(a) < starts(b); });
  const TfSlice& slice = *order[part];
  auto it = slice_entries_.find(TfSliceKey(name, slice));
  if (it == slice_entries_.end()) {
    throw DataLoss("TF checkpoint index '", index_path_, "': partitioned tensor '", name,
                   "' lists slice ", DescribeSlice(slice), " but has no entry for it");
  }
  const TfCheckpointEntry& s = it->second;
  if (s.tf_dtype != e.tf_dtype) {
    throw DataLoss("TF checkpoint index '", index_path_, "': slice ", DescribeSlice(slice), " of '",
                   name, "' holds TF dtype ", s.tf_dtype, ", the tensor ", e.tf_dtype);
  }
  return ReadStored(StrCat(name, " slice ", DescribeSlice(slice)), s.dtype, s.shape, s.shard_id,
                    s.offset, s.size, s.masked_crc32c);
}

Tensor TfCheckpointReader::Reassemble(const TfCheckpointEntry& e) const {
  const int rank = e.shape.rank();
  Tensor full(e.dtype, e.shape);
  int64_t covered = 0;
  std::vector<std::vector<int64_t>> begins, ends;
  for (const TfSlice& slice : e.slices) {
    auto fail = [&](const auto&... what) {
      return DataLoss("TF checkpoint index '", index_path_, "': partitioned tensor '", e.name, "' ",
                      e.shape.ToString(), ", slice ", DescribeSlice(slice), ": ", what...);
    };
    if (static_cast<int>(slice.size()) != rank) throw fail("its rank differs from the tensor's");
    std::vector<int64_t> begin(rank), end(rank), dims(rank);
    for (int d = 0; d < rank; ++d) {
      const TfSliceExtent& x = slice[d];
      const int64_t length = x.length < 0 ? e.shape.dim(d) : x.length;
      if (x.start < 0 || (x.length < 0 && x.start != 0) || length > e.shape.dim(d) - x.start) {
        throw fail("it lies outside dimension ", d, " of size ", e.shape.dim(d));
      }
      begin[d] = x.start;
      end[d] = x.start + length;
      dims[d] = length;
    }
    for (size_t j = 0; j < begins.size(); ++j) {
      bool overlap = true;
      for (int d = 0; d < rank; ++d) {
        overlap = overlap && begin[d] < ends[j][d] && begins[j][d] < end[d];
      }
      if (overlap && rank > 0) throw fail("it overlaps another slice");
    }
    const std::string key = TfSliceKey(e.name, slice);
    auto it = slice_entries_.find(key);
    if (it == slice_entries_.end()) throw fail("the index has no entry for this slice");
    const TfCheckpointEntry& s = it->second;
    const Shape slice_shape(dims);
    if (s.tf_dtype != e.tf_dtype || !(s.shape == slice_shape)) {
      throw fail("its entry holds ", DTypeName(s.dtype), s.shape.ToString(), ", not ",
                 DTypeName(e.dtype), slice_shape.ToString());
    }
    Tensor part = ReadStored(StrCat(e.name, " slice ", DescribeSlice(slice)), s.dtype, s.shape,
                             s.shard_id, s.offset, s.size, s.masked_crc32c);
    CopyIntoSlice(part, begin, full);
    covered += slice_shape.num_elements();
    begins.push_back(std::move(begin));
    ends.push_back(std::move(end));
  }
  if (covered != e.shape.num_elements()) {
    throw DataLoss("TF checkpoint index '", index_path_, "': the ", e.slices.size(),
                   " slices of partitioned tensor '", e.name, "' cover ", covered, " of its ",
                   e.shape.num_elements(), " elements (a partition's entry is missing)");
  }
  return full;
}

}  // namespace loom
