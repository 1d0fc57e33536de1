#ifndef LOOM_TENSOR_TENSOR_H_
#define LOOM_TENSOR_TENSOR_H_

// Tensor: a dtype, a fully defined shape and a view into a refcounted Buffer. Copying a
// Tensor shares the buffer (cheap); Clone() copies the bytes. A Buffer is either owned
// (allocated here, 64-byte aligned) or borrowed from outside memory (a user's array, a
// memory-mapped file) with a release callback that runs when the last Tensor viewing it
// goes away; this is how data enters Loom without a copy.
// Thread-safety: const methods are safe from many threads; writing elements is the
// writer's responsibility (kernels write only tensors they just allocated).
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "loom/base/check.h"
#include "loom/tensor/dtype.h"
#include "loom/tensor/shape.h"

namespace loom {

inline constexpr size_t kTensorAlignment = 64;

class Buffer {
 public:
  // Owned, 64-byte aligned, uninitialized (strings are default-constructed).
  static std::shared_ptr<Buffer> Allocate(DType dtype, int64_t num_elements);
  // Borrowed: `release` (may be empty) runs once when the buffer is destroyed.
  static std::shared_ptr<Buffer> Borrow(void* data, size_t bytes, std::function<void()> release);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return bytes_; }
  bool owned() const { return owned_; }

 private:
  struct Private {};
  // An empty Buffer whose object (and refcount block) comes from a recycling allocator.
  static std::shared_ptr<Buffer> New();

 public:
  explicit Buffer(Private) {}  // for make_shared inside Allocate / Borrow only

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  bool owned_ = false;
  int64_t num_strings_ = 0;  // strings to destroy, for owned kString buffers
  std::function<void()> release_;
};

class Tensor {
 public:
  // An empty, undefined tensor (dtype kInvalid).
  Tensor() = default;
  // Allocates an owned buffer. Numeric elements are uninitialized; use Zeros() for zeros.
  // REQUIRES: shape.fully_defined().
  Tensor(DType dtype, const Shape& shape);
  static Tensor Zeros(DType dtype, const Shape& shape);
  // Wraps outside memory without copying; `release` runs when the last view is gone.
  static Tensor Borrowed(DType dtype, const Shape& shape, void* data,
                         std::function<void()> release);
  // A view of `buffer` starting `byte_offset` bytes in.
  static Tensor FromBuffer(DType dtype, const Shape& shape, std::shared_ptr<Buffer> buffer,
                           size_t byte_offset = 0);
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values, const Shape& shape);
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values) {
    return FromVector(values, Shape{static_cast<int64_t>(values.size())});
  }
  template <typename T>
  static Tensor Scalar(T value) {
    return FromVector(std::vector<T>{value}, Shape{});
  }
  static Tensor ScalarString(std::string value) {
    return FromVector(std::vector<std::string>{std::move(value)}, Shape{});
  }

  bool defined() const { return dtype_ != DType::kInvalid; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t NumElements() const { return num_elements_; }
  size_t TotalBytes() const { return num_elements_ * DTypeSize(dtype_); }

  template <typename T>
  T* data() {
    CheckType(DTypeOf<T>());
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    CheckType(DTypeOf<T>());
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  std::span<T> flat() {
    return {data<T>(), static_cast<size_t>(num_elements_)};
  }
  template <typename T>
  std::span<const T> flat() const {
    return {data<T>(), static_cast<size_t>(num_elements_)};
  }
  // REQUIRES: NumElements() == 1.
  template <typename T>
  T scalar() const {
    LOOM_CHECK_EQ(num_elements_, 1);
    return data<T>()[0];
  }
  void* raw_data() const {
    return buffer_ ? static_cast<char*>(buffer_->data()) + offset_ : nullptr;
  }

  // Views (no copy). Slice takes rows [begin, end) of dim 0; SubTensor(i) is row i with
  // the leading dim removed; Reshaped keeps the elements. REQUIRES: valid ranges / sizes.
  Tensor Slice(int64_t begin, int64_t end) const;
  Tensor SubTensor(int64_t index) const;
  Tensor Reshaped(const Shape& shape) const;

  // A deep copy in a new owned buffer.
  Tensor Clone() const;
  // Copies `other`'s elements into this tensor. REQUIRES: same dtype and element count.
  void CopyFrom(const Tensor& other);
  // Element-wise equality of dtype, shape and values (bitwise for floats).
  bool Equals(const Tensor& other) const;

  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  size_t byte_offset() const { return offset_; }
  bool SharesBufferWith(const Tensor& other) const { return buffer_ && buffer_ == other.buffer_; }
  // True when no other Tensor views this buffer, so a kernel may reuse it in place.
  bool BufferIsUnique() const { return buffer_ && buffer_.use_count() == 1; }

  // "float32[2,3] [1 2 3 4 5 6]", abbreviated after max_entries values.
  std::string DebugString(int max_entries = 10) const;

 private:
  void CheckType(DType expected) const;

  DType dtype_ = DType::kInvalid;
  Shape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
};

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values, const Shape& shape) {
  Tensor t(DTypeOf<T>(), shape);
  LOOM_CHECK_EQ(static_cast<int64_t>(values.size()), t.NumElements())
      << "FromVector: value count does not match shape " << shape;
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

// std::vector<bool> has no data(); this specialization copies element by element too.
template <>
Tensor Tensor::FromVector<bool>(const std::vector<bool>& values, const Shape& shape);

std::ostream& operator<<(std::ostream& os, const Tensor& t);

}  // namespace loom

#endif  // LOOM_TENSOR_TENSOR_H_
