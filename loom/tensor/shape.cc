#include "loom/tensor/shape.h"

#include "loom/base/check.h"
#include "loom/base/error.h"

namespace loom {

void Shape::Assign(const int64_t* dims, size_t rank) {
  LOOM_CHECK(rank <= static_cast<size_t>(INT32_MAX)) << "rank " << rank << " is too large";
  rank_ = static_cast<int>(rank);
  if (rank_ <= kInlineRank) {
    std::copy_n(dims, rank, inline_);
  } else {
    heap_.assign(dims, dims + rank);
  }
}

Shape Shape::Unknown() {
  Shape s;
  s.rank_known_ = false;
  return s;
}

int64_t Shape::dim(int i) const {
  LOOM_CHECK(rank_known_) << "dim() of an unknown-rank shape";
  if (i < 0) i += rank();
  LOOM_CHECK(i >= 0 && i < rank()) << "dim " << i << " of " << ToString();
  return data()[i];
}

void Shape::set_dim(int i, int64_t size) {
  if (i < 0) i += rank();
  LOOM_CHECK(rank_known_ && i >= 0 && i < rank());
  data()[i] = size;
}

bool Shape::fully_defined() const {
  if (!rank_known_) return false;
  for (int64_t d : dims())
    if (d < 0) return false;
  return true;
}

std::optional<int64_t> Shape::NumElementsAtMost(uint64_t limit) const {
  if (!rank_known_) return std::nullopt;
  uint64_t n = 1;
  bool zero = false;
  for (int64_t d : dims()) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      zero = true;
      continue;
    }
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) || n > limit) return std::nullopt;
  }
  if (zero) return 0;
  if (n > limit) return std::nullopt;  // a scalar (no dims) has 1 element
  return static_cast<int64_t>(n);
}

int64_t Shape::num_elements() const {
  LOOM_CHECK(fully_defined()) << "num_elements of partial shape " << ToString();
  std::optional<int64_t> n = NumElementsAtMost(INT64_MAX);
  if (!n) {
    throw InvalidArgument("shape ", ToString(), " has more elements than an int64 can count");
  }
  return *n;
}

bool Shape::IsCompatibleWith(const Shape& other) const {
  if (!rank_known_ || !other.rank_known_) return true;
  if (rank() != other.rank()) return false;
  const int64_t* a = data();
  const int64_t* b = other.data();
  for (int i = 0; i < rank(); ++i) {
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  }
  return true;
}

Shape Shape::MergeWith(const Shape& other) const {
  if (!IsCompatibleWith(other)) {
    throw InvalidArgument("shapes ", ToString(), " and ", other.ToString(), " are not compatible");
  }
  if (!rank_known_) return other;
  if (!other.rank_known_) return *this;
  Shape merged = *this;
  int64_t* m = merged.data();
  for (int i = 0; i < rank(); ++i)
    if (m[i] < 0) m[i] = other.data()[i];
  return merged;
}

Shape Shape::WithLeadingDim(int64_t size) const {
  if (!rank_known_) return Unknown();
  Shape s;
  const size_t rank = rank_ + 1;
  if (rank <= kInlineRank) {
    s.inline_[0] = size;
    std::copy_n(data(), rank_, s.inline_ + 1);
    s.rank_ = static_cast<int>(rank);
    return s;
  }
  std::vector<int64_t> dims = {size};
  dims.insert(dims.end(), data(), data() + rank_);
  return Shape(dims);
}

Shape Shape::WithoutLeadingDim() const {
  if (!rank_known_) return Unknown();
  LOOM_CHECK(rank_ > 0) << "WithoutLeadingDim of a scalar shape";
  return Shape(DimsView(data() + 1, rank_ - 1));
}

std::string Shape::ToString() const {
  if (!rank_known_) return "<unknown>";
  std::string s = "[";
  const int64_t* d = data();
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ",";
    s += d[i] < 0 ? "?" : std::to_string(d[i]);
  }
  return s + "]";
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) { return os << shape.ToString(); }

}  // namespace loom
