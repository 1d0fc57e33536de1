#ifndef LOOM_TENSOR_SHAPE_H_
#define LOOM_TENSOR_SHAPE_H_

// Shape: a list of dimension sizes in which a dimension may be unknown (kUnknownDim, -1),
// or the whole rank may be unknown (Shape::Unknown()). Graph shapes are partial; a
// Tensor's shape is always fully defined. A value type, cheap to copy: up to
// Shape::kInlineRank dims live inside the object (copying a Tensor's shape allocates
// nothing); a higher rank keeps its dims on the heap. A moved-from Shape is a scalar, as
// a moved-from std::vector of dims was.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "loom/tensor/dim_vector.h"

namespace loom {

inline constexpr int64_t kUnknownDim = -1;

class Shape {
 public:
  // Ranks up to this keep their dims inline (no heap allocation).
  static constexpr int kInlineRank = static_cast<int>(DimVector::kInlineSize);

  // A scalar: rank 0, known.
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(const std::vector<int64_t>& dims) : dims_(dims.data(), dims.size()) {}
  // For the callers that hand over a vector (Shape(std::move(dims))); it is copied too.
  explicit Shape(std::vector<int64_t>&& dims) : dims_(dims.data(), dims.size()) {}
  explicit Shape(DimsView dims) : dims_(dims.data(), dims.size()) {}
  explicit Shape(DimVector dims) : dims_(std::move(dims)) {}
  static Shape Unknown();

  bool rank_known() const { return rank_known_; }
  // REQUIRES: rank_known().
  int rank() const { return static_cast<int>(dims_.size()); }
  // Negative i counts from the end. REQUIRES: rank_known() and -rank <= i < rank.
  int64_t dim(int i) const;
  // Empty for an unknown rank. Valid while this Shape lives unmodified (see DimsView).
  DimsView dims() const { return dims_.view(); }
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
  bool operator==(const Shape& other) const = default;

 private:
  DimVector dims_;
  bool rank_known_ = true;
};

std::ostream& operator<<(std::ostream& os, const Shape& shape);

}  // namespace loom

#endif  // LOOM_TENSOR_SHAPE_H_
