#ifndef LOOM_TENSOR_SHAPE_H_
#define LOOM_TENSOR_SHAPE_H_

// Shape: a list of dimension sizes in which a dimension may be unknown (kUnknownDim, -1),
// or the whole rank may be unknown (Shape::Unknown()). Graph shapes are partial; a
// Tensor's shape is always fully defined. A value type, cheap to copy: up to
// Shape::kInlineRank dims live inside the object (copying a Tensor's shape allocates
// nothing); a higher rank keeps its dims on the heap.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

namespace loom {

inline constexpr int64_t kUnknownDim = -1;

// A read-only view of a Shape's dims: what Shape::dims() returns. Iterable and indexable
// like the std::vector it replaces, and converts to one (a copy) where a vector is wanted.
// It points into the Shape: valid while that Shape lives and is not assigned to, so keep
// the Shape (not the view) when the dims must outlive it.
class DimsView {
 public:
  using value_type = int64_t;
  using size_type = size_t;
  using const_iterator = const int64_t*;
  using iterator = const int64_t*;

  constexpr DimsView() = default;
  constexpr DimsView(const int64_t* data, size_t size) : data_(data), size_(size) {}

  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // REQUIRES: i < size(); front() and back() REQUIRE !empty().
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t front() const { return data_[0]; }
  int64_t back() const { return data_[size_ - 1]; }

  std::vector<int64_t> ToVector() const { return {begin(), end()}; }
  operator std::vector<int64_t>() const { return ToVector(); }  // NOLINT: a vector's stand-in
  operator std::span<const int64_t>() const { return {data_, size_}; }  // NOLINT

  friend bool operator==(DimsView a, DimsView b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

class Shape {
 public:
  // Ranks up to this keep their dims inline (no heap allocation).
  static constexpr int kInlineRank = 6;

  // A scalar: rank 0, known.
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) { Assign(dims.begin(), dims.size()); }
  explicit Shape(const std::vector<int64_t>& dims) { Assign(dims.data(), dims.size()); }
  explicit Shape(DimsView dims) { Assign(dims.data(), dims.size()); }
  static Shape Unknown();
  Shape(const Shape&) = default;
  Shape& operator=(const Shape&) = default;
  // A moved-from Shape is a scalar, as a moved-from std::vector of dims was.
  Shape(Shape&& other) noexcept { MoveFrom(other); }
  Shape& operator=(Shape&& other) noexcept {
    if (this != &other) MoveFrom(other);
    return *this;
  }

  bool rank_known() const { return rank_known_; }
  // REQUIRES: rank_known().
  int rank() const { return rank_; }
  // Negative i counts from the end. REQUIRES: rank_known() and -rank <= i < rank.
  int64_t dim(int i) const;
  // Empty for an unknown rank. Valid while this Shape lives unmodified (see DimsView).
  DimsView dims() const { return {data(), static_cast<size_t>(rank_)}; }
  void set_dim(int i, int64_t size);
  bool fully_defined() const;
  // Product of the dims. Throws InvalidArgument when the product of the nonzero dims
  // exceeds int64 (a zero dim does not excuse the others: strides and row sizes still
  // multiply them). REQUIRES: fully_defined().
  int64_t num_elements() const;
  // The product of the dims when every dim is known and the product of the nonzero ones is
  // at most `limit`; otherwise nullopt. The check for shapes read from files, before
  // anything is allocated or multiplied.
  std::optional<int64_t> NumElementsAtMost(uint64_t limit) const;

  // True when some tensor shape could match both (unknown dims match anything).
  bool IsCompatibleWith(const Shape& other) const;
  // The most specific shape compatible with both; throws InvalidArgument if incompatible.
  Shape MergeWith(const Shape& other) const;
  // This shape with `size` prepended / the first dim removed.
  Shape WithLeadingDim(int64_t size) const;
  Shape WithoutLeadingDim() const;

  // "[32,784]", "[?,784]", "<unknown>".
  std::string ToString() const;
  bool operator==(const Shape& other) const {
    return rank_known_ == other.rank_known_ && dims() == other.dims();
  }

 private:
  const int64_t* data() const { return rank_ <= kInlineRank ? inline_ : heap_.data(); }
  int64_t* data() { return rank_ <= kInlineRank ? inline_ : heap_.data(); }
  void Assign(const int64_t* dims, size_t rank);
  void MoveFrom(Shape& other) {
    std::copy_n(other.inline_, kInlineRank, inline_);
    heap_ = std::move(other.heap_);
    rank_ = other.rank_;
    rank_known_ = other.rank_known_;
    other.heap_.clear();
    other.rank_ = 0;
  }

  // Invariant: the dims are inline_[0, rank_) when rank_ <= kInlineRank (heap_ then empty),
  // else heap_ (rank_ elements).
  int64_t inline_[kInlineRank] = {};
  std::vector<int64_t> heap_;
  int rank_ = 0;
  bool rank_known_ = true;
};

std::ostream& operator<<(std::ostream& os, const Shape& shape);

}  // namespace loom

#endif  // LOOM_TENSOR_SHAPE_H_
