#include "loom/tensor/tensor.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <sstream>
#include <unordered_map>

#include "loom/base/error.h"

namespace loom {
namespace {

// Keeps freed tensor buffers for reuse. A training step allocates the same sizes every
// step; returning them to the OS (glibc unmaps or trims large blocks) made every step pay
// first-touch page faults that cost more than the kernels themselves. Only buffers up to
// kMaxCachedBuffer are kept, kMaxCachedTotal in all, so a large dataset freed by the user
// goes straight back to the OS.
class BufferCache {
 public:
  static constexpr size_t kMinCachedBuffer = size_t{16} << 10;
  static constexpr size_t kMaxCachedBuffer = size_t{64} << 20;
  static constexpr size_t kMaxCachedTotal = size_t{512} << 20;

  static BufferCache& Get() {
    static BufferCache* cache = new BufferCache();  // never destroyed: buffers outlive statics
    return *cache;
  }

  void* Take(size_t rounded) {
    if (rounded < kMinCachedBuffer) return SmallTake(rounded);
    if (rounded > kMaxCachedBuffer) return std::aligned_alloc(kTensorAlignment, rounded);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(rounded);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        cached_ -= rounded;
        return p;
      }
    }
    return std::aligned_alloc(kTensorAlignment, rounded);
  }

  void Give(void* p, size_t rounded) {
    if (rounded < kMinCachedBuffer) return SmallGive(p, rounded);
    if (rounded <= kMaxCachedBuffer) {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_ + rounded <= kMaxCachedTotal) {
        free_[rounded].push_back(p);
        cached_ += rounded;
        return;
      }
    }
    std::free(p);
  }

 private:
  // Small buffers (below kMinCachedBuffer, sizes rounded to power-of-two classes) are
  // recycled through per-thread free lists, without a lock: a small-model step allocates
  // a few dozen of them, and aligned_alloc's slow path cost more than the kernels.
  static constexpr int kSmallClasses = 9;       // 64 B .. 16 KiB / 2
  static constexpr size_t kSmallPerClass = 64;  // at most 64 free buffers per class per thread
  struct SmallLists {
    std::vector<void*> free[kSmallClasses];
    ~SmallLists() {
      for (auto& list : free)
        for (void* p : list) std::free(p);
    }
  };
  static int SmallClass(size_t rounded) {
    int c = 0;
    while ((size_t{kTensorAlignment} << c) < rounded) ++c;
    return c;
  }
  // Set when this thread's lists are destroyed (thread exit), after which buffers freed on
  // the thread (static tensors at process exit) go straight back to malloc.
  static inline thread_local bool small_gone_ = false;
  static SmallLists& Small() {
    thread_local struct Holder {
      SmallLists lists;
      ~Holder() { small_gone_ = true; }
    } holder;
    return holder.lists;
  }
  static void* SmallTake(size_t rounded) {
    const int c = SmallClass(rounded);
    if (small_gone_) return std::aligned_alloc(kTensorAlignment, size_t{kTensorAlignment} << c);
    auto& list = Small().free[c];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      return p;
    }
    return std::aligned_alloc(kTensorAlignment, size_t{kTensorAlignment} << c);
  }
  static void SmallGive(void* p, size_t rounded) {
    if (small_gone_) return std::free(p);
    auto& list = Small().free[SmallClass(rounded)];
    if (list.size() < kSmallPerClass) {
      list.push_back(p);
    } else {
      std::free(p);
    }
  }

  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};

size_t RoundedSize(size_t bytes) {
  // aligned_alloc needs a multiple of the alignment; page multiples keep size classes few.
  // Small sizes use power-of-two classes so that every buffer of a class is interchangeable.
  if (bytes < BufferCache::kMinCachedBuffer) {
    size_t rounded = kTensorAlignment;
    while (rounded < bytes) rounded <<= 1;
    return rounded;
  }
  return (bytes + 4095) / 4096 * 4096;
}

// Allocates the Buffer objects themselves (with their shared_ptr control block, one block
// per tensor) through the buffer cache's small lists: every kernel output made one malloc
// and one free for it. Blocks may be freed on another thread than the one that made them;
// the lists are per thread and bounded, so a block just changes lists.
template <typename T>
struct RecycledAllocator {
  using value_type = T;
  RecycledAllocator() = default;
  template <typename U>
  RecycledAllocator(const RecycledAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator
  T* allocate(size_t n) {
    void* p = BufferCache::Get().Take(RoundedSize(n * sizeof(T)));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) { BufferCache::Get().Give(p, RoundedSize(n * sizeof(T))); }
  template <typename U>
  bool operator==(const RecycledAllocator<U>&) const {
    return true;
  }
};

}  // namespace

std::shared_ptr<Buffer> Buffer::New() {
  return std::allocate_shared<Buffer>(RecycledAllocator<Buffer>(), Private{});
}

std::shared_ptr<Buffer> Buffer::Allocate(DType dtype, int64_t num_elements) {
  LOOM_CHECK(num_elements >= 0);
  auto buffer = New();
  size_t bytes = static_cast<size_t>(num_elements) * DTypeSize(dtype);
  const size_t rounded = RoundedSize(bytes);
  void* data = BufferCache::Get().Take(rounded);
  if (data == nullptr) {
    throw ResourceExhausted("cannot allocate ", bytes, " bytes for a ", DTypeName(dtype),
                            " tensor of ", num_elements, " elements");
  }
  buffer->data_ = data;
  buffer->bytes_ = bytes;
  buffer->owned_ = true;
  if (dtype == DType::kString) {
    auto* strings = static_cast<std::string*>(data);
    for (int64_t i = 0; i < num_elements; ++i) new (&strings[i]) std::string();
    buffer->num_strings_ = num_elements;
  }
  return buffer;
}

std::shared_ptr<Buffer> Buffer::Borrow(void* data, size_t bytes, std::function<void()> release) {
  auto buffer = New();
  buffer->data_ = data;
  buffer->bytes_ = bytes;
  buffer->owned_ = false;
  buffer->release_ = std::move(release);
  return buffer;
}

Buffer::~Buffer() {
  if (owned_) {
    auto* strings = static_cast<std::string*>(data_);
    for (int64_t i = 0; i < num_strings_; ++i) strings[i].~basic_string();
    BufferCache::Get().Give(data_, RoundedSize(bytes_));
  } else if (release_) {
    release_();
  }
}

Tensor::Tensor(DType dtype, const Shape& shape) : dtype_(dtype), shape_(shape) {
  LOOM_CHECK(shape.fully_defined()) << "Tensor shape must be fully defined, got " << shape;
  LOOM_CHECK(dtype != DType::kInvalid);
  num_elements_ = shape.num_elements();
  buffer_ = Buffer::Allocate(dtype, num_elements_);
}

Tensor Tensor::Zeros(DType dtype, const Shape& shape) {
  Tensor t(dtype, shape);
  if (dtype != DType::kString) std::memset(t.raw_data(), 0, t.TotalBytes());
  return t;
}

Tensor Tensor::Borrowed(DType dtype, const Shape& shape, void* data,
                        std::function<void()> release) {
  LOOM_CHECK(dtype != DType::kString) << "string tensors cannot borrow memory";
  LOOM_CHECK(shape.fully_defined());
  size_t bytes = shape.num_elements() * DTypeSize(dtype);
  return FromBuffer(dtype, shape, Buffer::Borrow(data, bytes, std::move(release)), 0);
}

Tensor Tensor::FromBuffer(DType dtype, const Shape& shape, std::shared_ptr<Buffer> buffer,
                          size_t byte_offset) {
  LOOM_CHECK(shape.fully_defined());
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.num_elements_ = shape.num_elements();
  LOOM_CHECK(byte_offset + t.TotalBytes() <= buffer->size())
      << "view of " << t.TotalBytes() << " bytes at offset " << byte_offset
      << " exceeds a buffer of " << buffer->size();
  t.buffer_ = std::move(buffer);
  t.offset_ = byte_offset;
  return t;
}

template <>
Tensor Tensor::FromVector<bool>(const std::vector<bool>& values, const Shape& shape) {
  Tensor t(DType::kBool, shape);
  LOOM_CHECK_EQ(static_cast<int64_t>(values.size()), t.NumElements());
  bool* out = t.data<bool>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

void Tensor::CheckType(DType expected) const {
  LOOM_CHECK(dtype_ == expected) << "tensor holds " << DTypeName(dtype_) << ", accessed as "
                                 << DTypeName(expected);
}

Tensor Tensor::Slice(int64_t begin, int64_t end) const {
  LOOM_CHECK(shape_.rank() >= 1 && 0 <= begin && begin <= end && end <= shape_.dim(0))
      << "Slice [" << begin << "," << end << ") of " << shape_;
  Shape s = shape_;
  s.set_dim(0, end - begin);
  int64_t row = shape_.dim(0) == 0 ? 0 : num_elements_ / shape_.dim(0);
  return FromBuffer(dtype_, s, buffer_, offset_ + begin * row * DTypeSize(dtype_));
}

Tensor Tensor::SubTensor(int64_t index) const {
  LOOM_CHECK(shape_.rank() >= 1 && 0 <= index && index < shape_.dim(0))
      << "SubTensor " << index << " of " << shape_;
  Shape s = shape_.WithoutLeadingDim();
  int64_t row = num_elements_ / shape_.dim(0);
  return FromBuffer(dtype_, s, buffer_, offset_ + index * row * DTypeSize(dtype_));
}

Tensor Tensor::Reshaped(const Shape& shape) const {
  LOOM_CHECK(shape.fully_defined() && shape.num_elements() == num_elements_)
      << "cannot reshape " << shape_ << " to " << shape;
  return FromBuffer(dtype_, shape, buffer_, offset_);
}

Tensor Tensor::Clone() const {
  if (!defined()) return Tensor();
  Tensor t(dtype_, shape_);
  t.CopyFrom(*this);
  return t;
}

void Tensor::CopyFrom(const Tensor& other) {
  LOOM_CHECK(dtype_ == other.dtype_ && num_elements_ == other.num_elements_);
  if (dtype_ == DType::kString) {
    auto src = other.flat<std::string>();
    auto dst = flat<std::string>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
  } else if (TotalBytes() > 0) {
    std::memcpy(raw_data(), other.raw_data(), TotalBytes());
  }
}

bool Tensor::Equals(const Tensor& other) const {
  if (dtype_ != other.dtype_ || !(shape_ == other.shape_)) return false;
  if (dtype_ == DType::kString) {
    auto a = flat<std::string>(), b = other.flat<std::string>();
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  return TotalBytes() == 0 || std::memcmp(raw_data(), other.raw_data(), TotalBytes()) == 0;
}

std::string Tensor::DebugString(int max_entries) const {
  if (!defined()) return "<undefined tensor>";
  std::ostringstream os;
  os << DTypeName(dtype_) << shape_.ToString() << " [";
  int64_t n = std::min<int64_t>(num_elements_, max_entries);
  SwitchAll(dtype_, "DebugString", [&](auto tag) {
    using T = decltype(tag);
    const T* d = data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if (i) os << ' ';
      if constexpr (std::is_same_v<T, uint8_t>) {
        os << static_cast<int>(d[i]);
      } else if constexpr (std::is_same_v<T, std::string>) {
        os << '"' << d[i] << '"';
      } else {
        os << d[i];
      }
    }
    return 0;
  });
  if (n < num_elements_) os << " ...";
  os << "]";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.DebugString(); }

}  // namespace loom
