#ifndef LOOM_TENSOR_DIM_VECTOR_H_
#define LOOM_TENSOR_DIM_VECTOR_H_

// DimVector: a vector of int64 (dims, strides, indices) that keeps up to kInlineSize
// elements inside the object and spills to the heap above that, so the shapes and
// broadcast plans that every kernel call makes allocate nothing at the ranks models use.
// DimsView: a read-only view of contiguous dims, what Shape::dims() returns.
// Both are value types; not thread-safe to modify concurrently.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace loom {

// Iterable and indexable like the std::vector it stands in for, and converts to one (a
// copy) where a vector is wanted. It points into its owner (a Shape, a DimVector): valid
// while that lives and is not modified, so keep the owner when the dims must outlive it.
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
  operator std::vector<int64_t>() const { return ToVector(); }          // NOLINT: a stand-in
  operator std::span<const int64_t>() const { return {data_, size_}; }  // NOLINT

  friend bool operator==(DimsView a, DimsView b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

class DimVector {
 public:
  // Sizes up to this keep their elements inline (no heap allocation).
  static constexpr size_t kInlineSize = 6;

  DimVector() = default;
  DimVector(const int64_t* data, size_t size) { Assign(data, size); }
  DimVector(std::initializer_list<int64_t> values) { Assign(values.begin(), values.size()); }
  // `size` copies of `value`.
  DimVector(size_t size, int64_t value) { resize(size, value); }
  DimVector(const DimVector&) = default;
  DimVector& operator=(const DimVector&) = default;
  // A moved-from DimVector is empty, like a moved-from std::vector.
  DimVector(DimVector&& other) noexcept { MoveFrom(other); }
  DimVector& operator=(DimVector&& other) noexcept {
    if (this != &other) MoveFrom(other);
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* data() const { return size_ <= kInlineSize ? inline_ : heap_.data(); }
  int64_t* data() { return size_ <= kInlineSize ? inline_ : heap_.data(); }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  // REQUIRES: i < size(); front() and back() REQUIRE !empty().
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t front() const { return data()[0]; }
  int64_t back() const { return data()[size_ - 1]; }
  int64_t& back() { return data()[size_ - 1]; }
  DimsView view() const { return {data(), size_}; }

  void push_back(int64_t value) {
    if (size_ < kInlineSize) {
      inline_[size_++] = value;
      return;
    }
    if (size_ == kInlineSize) heap_.assign(inline_, inline_ + kInlineSize);
    heap_.push_back(value);
    ++size_;
  }
  // New elements are `value`.
  void resize(size_t size, int64_t value = 0);
  void assign(size_t size, int64_t value) {
    clear();
    resize(size, value);
  }
  void clear() {
    heap_.clear();
    size_ = 0;
  }

  friend bool operator==(const DimVector& a, const DimVector& b) { return a.view() == b.view(); }

 private:
  void Assign(const int64_t* data, size_t size) {
    size_ = size;
    if (size <= kInlineSize) {
      std::copy_n(data, size, inline_);
    } else {
      heap_.assign(data, data + size);
    }
  }
  void MoveFrom(DimVector& other) {
    std::copy_n(other.inline_, kInlineSize, inline_);
    heap_ = std::move(other.heap_);
    size_ = other.size_;
    other.heap_.clear();
    other.size_ = 0;
  }

  // Invariant: the elements are inline_[0, size_) when size_ <= kInlineSize (heap_ is then
  // empty), else heap_ (size_ elements).
  int64_t inline_[kInlineSize] = {};
  std::vector<int64_t> heap_;
  size_t size_ = 0;
};

inline void DimVector::resize(size_t size, int64_t value) {
  if (size <= kInlineSize) {
    if (size_ > kInlineSize) {
      std::copy_n(heap_.data(), size, inline_);
      heap_.clear();
    } else if (size > size_) {
      std::fill(inline_ + size_, inline_ + size, value);
    }
  } else {
    if (size_ <= kInlineSize) heap_.assign(inline_, inline_ + size_);
    heap_.resize(size, value);
  }
  size_ = size;
}

}  // namespace loom

#endif  // LOOM_TENSOR_DIM_VECTOR_H_
