#include "loom/tensor/shape.h"

#include "loom/base/check.h"
#include "loom/base/error.h"

namespace loom {

Shape Shape::Unknown() {
  Shape s;
  s.rank_known_ = false;
  return s;
}

int64_t Shape::dim(int i) const {
  LOOM_CHECK(rank_known_) << "dim() of an unknown-rank shape";
  if (i < 0) i += rank();
  LOOM_CHECK(i >= 0 && i < rank()) << "dim " << i << " of " << ToString();
  return dims_[i];
}

void Shape::set_dim(int i, int64_t size) {
  if (i < 0) i += rank();
  LOOM_CHECK(rank_known_ && i >= 0 && i < rank());
  dims_[i] = size;
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
  for (int i = 0; i < rank(); ++i) {
    const int64_t a = dims_[i], b = other.dims_[i];
    if (a >= 0 && b >= 0 && a != b) return false;
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
  for (int i = 0; i < rank(); ++i)
    if (merged.dims_[i] < 0) merged.dims_[i] = other.dims_[i];
  return merged;
}

Shape Shape::WithLeadingDim(int64_t size) const {
  if (!rank_known_) return Unknown();
  DimVector dims;
  dims.push_back(size);
  for (int64_t d : dims_) dims.push_back(d);
  return Shape(std::move(dims));
}

Shape Shape::WithoutLeadingDim() const {
  if (!rank_known_) return Unknown();
  LOOM_CHECK(!dims_.empty()) << "WithoutLeadingDim of a scalar shape";
  return Shape(DimsView(dims_.data() + 1, dims_.size() - 1));
}

std::string Shape::ToString() const {
  if (!rank_known_) return "<unknown>";
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  return s + "]";
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) { return os << shape.ToString(); }

}  // namespace loom
