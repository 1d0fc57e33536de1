#include "loom/ops/bf16.h"

#include <atomic>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>

#include "loom/base/check.h"
#include "loom/base/error.h"
#include "loom/base/logging.h"
#include "loom/base/thread_pool.h"
#include "loom/ops/bf16_support.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace loom::bf16 {
namespace {

// Rounding streams at memory speed; below this many elements a split costs more than it saves.
constexpr int64_t kMinChunk = int64_t{1} << 15;

std::atomic<int> fallback_warnings{0};

bool HasAll(dnnl_cpu_isa_t isa, dnnl_cpu_isa_t bits) { return (isa & bits) == bits; }

#if defined(__x86_64__)
// AVX-512 F, BW and BF16 in cpuid, and the OS saving the zmm and opmask state (XCR0's
// SSE, AVX, opmask, ZMM_Hi256 and Hi16_ZMM bits).
bool DetectAvx512Bf16() {
  unsigned int eax, ebx, ecx, edx;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(1, 0, eax, ebx, ecx, edx);
  if ((ecx & (1u << 27)) == 0) return false;  // OSXSAVE: xgetbv is available
  unsigned int xcr0_lo, xcr0_hi;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 0xe6u) != 0xe6u) return false;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  if ((ebx & (1u << 16)) == 0 || (ebx & (1u << 30)) == 0) return false;  // AVX512F, AVX512BW
  if (eax < 1) return false;
  __cpuid_count(7, 1, eax, ebx, ecx, edx);
  return (eax & (1u << 5)) != 0;  // AVX512_BF16
}

// The denormal lanes of 16 floats: vcvtne2ps2bf16 flushes denormal inputs to (signed) zero,
// which the scalar rounding (and IEEE) does not, so chunks holding one take the scalar path.
__attribute__((target("avx512f"))) inline __mmask16 DenormalLanes(__m512i bits) {
  const __m512i exponent = _mm512_set1_epi32(0x7f800000);
  const __m512i magnitude = _mm512_set1_epi32(0x7fffffff);
  return _mm512_testn_epi32_mask(bits, exponent) & _mm512_test_epi32_mask(bits, magnitude);
}

// FloatToBf16Bits over [begin, end) with vcvtne2ps2bf16, 32 floats at a time: the same
// bits as the scalar rounding (round to nearest even, NaN quieted as (bits >> 16) | 0x40,
// overflow to inf), denormals included (above).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void FloatToBf16Avx512(const float* in,
                                                                              uint16_t* out,
                                                                              int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 lo = _mm512_loadu_ps(in + i), hi = _mm512_loadu_ps(in + i + 16);
    if ((DenormalLanes(_mm512_castps_si512(lo)) | DenormalLanes(_mm512_castps_si512(hi))) != 0) {
      for (int64_t j = i; j < i + 32; ++j) out[j] = FloatToBf16Bits(in[j]);
      continue;
    }
    const __m512bh packed = _mm512_cvtne2ps_pbh(hi, lo);  // lo in the low half
    _mm512_storeu_si512(out + i, reinterpret_cast<const __m512i&>(packed));
  }
  for (; i < n; ++i) out[i] = FloatToBf16Bits(in[i]);
}

// RoundToBf16 over [begin, end) likewise: the bf16 bits widened back to float32.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void RoundToBf16Avx512(const float* in,
                                                                              float* out,
                                                                              int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(in + i);
    if (DenormalLanes(_mm512_castps_si512(x)) != 0) {
      for (int64_t j = i; j < i + 16; ++j) out[j] = RoundToBf16(in[j]);
      continue;
    }
    const __m256bh packed = _mm512_cvtneps_pbh(x);
    // (the maskz forms: GCC 12's unmasked ones read an "undefined" vector that -Werror's
    // maybe-uninitialized rejects under a target attribute)
    const __m512i wide = _mm512_maskz_slli_epi32(
        0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, reinterpret_cast<const __m256i&>(packed)), 16);
    _mm512_storeu_ps(out + i, _mm512_castsi512_ps(wide));
  }
  for (; i < n; ++i) out[i] = RoundToBf16(in[i]);
}
#else
bool DetectAvx512Bf16() { return false; }
void FloatToBf16Avx512(const float*, uint16_t*, int64_t) {}
void RoundToBf16Avx512(const float*, float*, int64_t) {}
#endif

// Whether the conversions use AVX-512 BF16: the CPU's, read once (the library is built for
// baseline x86-64, so the instructions are chosen here at run time).
bool UseAvx512Bf16() {
  static const bool use = DetectAvx512Bf16();
  return use;
}

}  // namespace

bool ConvertsWithAvx512Bf16() { return UseAvx512Bf16(); }

AttrDef PrecisionAttrDef() {
  AttrDef def = kPrecision.Optional();
  for (Precision p :
       {Precision::kFloat32, Precision::kBf16, Precision::kBf16Strict, Precision::kBf16Emulated}) {
    def.allowed.emplace_back(std::string(PrecisionName(p)));
  }
  return def;
}

void AddPrecisionAttr(Precision precision, AttrMap& attrs) {
  if (precision != Precision::kFloat32) attrs.Set(kPrecision(PrecisionName(precision)));
}

Precision NodePrecision(const Node& node) {
  const std::string* name = node.find_attr(kPrecision);
  return name == nullptr ? Precision::kFloat32
                         : ParsePrecision(*name, node.description() + ": attribute 'precision'");
}

void RoundToBf16(const float* in, float* out, int64_t n, ThreadPool& pool) {
  const bool vector = UseAvx512Bf16();
  pool.ParallelFor(n, kMinChunk, [&](int64_t begin, int64_t end) {
    if (vector) return RoundToBf16Avx512(in + begin, out + begin, end - begin);
    for (int64_t i = begin; i < end; ++i) out[i] = RoundToBf16(in[i]);
  });
}

void FloatToBf16(const float* in, uint16_t* out, int64_t n) {
  if (UseAvx512Bf16()) return FloatToBf16Avx512(in, out, n);
  for (int64_t i = 0; i < n; ++i) out[i] = FloatToBf16Bits(in[i]);
}

void FloatToBf16(const float* in, uint16_t* out, int64_t n, ThreadPool& pool) {
  pool.ParallelFor(n, kMinChunk, [&](int64_t begin, int64_t end) {
    FloatToBf16(in + begin, out + begin, end - begin);
  });
}

Tensor Rounded(const Tensor& t, ThreadPool& pool) {
  LOOM_CHECK(t.dtype() == kFloat32) << "bf16::Rounded of a " << DTypeName(t.dtype()) << " tensor";
  Tensor out(kFloat32, t.shape());
  RoundToBf16(t.data<float>(), out.data<float>(), t.NumElements(), pool);
  return out;
}

const char* HardwareName(Hardware hardware) {
  switch (hardware) {
    case Hardware::kNone:
      return "no bf16 hardware";
    case Hardware::kAvx512Bf16:
      return "AVX-512 BF16";
    case Hardware::kAmx:
      return "AMX-BF16";
  }
  return "?";
}

Hardware DetectHardware() {
  static const Hardware hardware = [] {
    const auto isa = static_cast<dnnl_cpu_isa_t>(dnnl::get_effective_cpu_isa());
    if (HasAll(isa, dnnl_cpu_isa_avx512_core_amx)) return Hardware::kAmx;
    if (HasAll(isa, dnnl_cpu_isa_avx512_core_bf16)) return Hardware::kAvx512Bf16;
    return Hardware::kNone;
  }();
  return hardware;
}

std::string CpuModelName() {
#if defined(__x86_64__)
  unsigned int regs[12];
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000004u) return "unknown x86-64 CPU";
  for (unsigned int i = 0; i < 3; ++i) {
    __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2],
                &regs[4 * i + 3]);
  }
  char brand[49];
  std::memcpy(brand, regs, 48);
  brand[48] = '\0';
  std::string name(brand);
  const size_t first = name.find_first_not_of(' ');
  const size_t last = name.find_last_not_of(' ');
  return first == std::string::npos ? "unknown x86-64 CPU" : name.substr(first, last - first + 1);
#else
  return "unknown CPU";
#endif
}

const char* PathName(Path path) {
  switch (path) {
    case Path::kFloat32:
      return "float32";
    case Path::kEmulated:
      return "bf16 emulated";
    case Path::kHardware:
      return "bf16 hardware";
  }
  return "?";
}

Path ChoosePath(Precision requested, Hardware hardware, std::string_view node) {
  switch (requested) {
    case Precision::kFloat32:
      return Path::kFloat32;
    case Precision::kBf16Emulated:
      return Path::kEmulated;
    case Precision::kBf16:
    case Precision::kBf16Strict:
      if (hardware != Hardware::kNone) return Path::kHardware;
      break;
  }
  if (requested == Precision::kBf16Strict) {
    throw FailedPrecondition(
        node,
        ": precision \"bf16-strict\" needs bf16 hardware (AMX-BF16 or AVX-512 BF16), "
        "which this CPU (",
        CpuModelName(),
        ") lacks; use precision \"bf16\" to fall back to float32 here, or \"bf16-emulated\" "
        "to round the inputs to bf16 in software");
  }
  if (fallback_warnings.exchange(1) == 0) {
    LOOM_LOG(WARNING) << node << ": precision \"bf16\" runs its products in float32 on this CPU ("
                      << CpuModelName()
                      << "), which has neither AMX-BF16 nor AVX-512 BF16 (logged once); "
                         "\"bf16-emulated\" rounds the inputs to bf16 in software instead";
  }
  return Path::kFloat32;
}

Path KernelPath(const KernelContext& c, DType dtype) {
  if (dtype != kFloat32) return Path::kFloat32;
  const Precision requested = NodePrecision(c.node());
  if (requested == Precision::kFloat32) return Path::kFloat32;
  try {
    return ChoosePath(requested, DetectHardware(), c.node().description());
  } catch (const Error& e) {
    throw e.AtNode(c.node().name());
  }
}

int FallbackWarnings() { return fallback_warnings.load(); }

bool ProductRunsInFloat32(Hardware hardware, bool transpose_b, int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kMaxNarrowColumns = 16;
  // The measured range: 2^19.3-2^20.3 multiply-adds; 2^22 is where blas.h's narrow kernels
  // stop. Smaller products were not measured and keep the bf16 path.
  constexpr int64_t kMinNarrowWork = int64_t{1} << 16;
  constexpr int64_t kMaxNarrowWork = int64_t{1} << 22;
  const int64_t work = m * n * k;
  return hardware == Hardware::kAvx512Bf16 && !transpose_b && n >= 1 && n <= kMaxNarrowColumns &&
         work >= kMinNarrowWork && work <= kMaxNarrowWork;
}

Path ProductPath(const KernelContext& c, DType dtype, bool transpose_b, int64_t m, int64_t n,
                 int64_t k) {
  const Path path = KernelPath(c, dtype);  // throws for bf16-strict without hardware
  if (path == Path::kFloat32) return path;
  return ProductRunsInFloat32(DetectHardware(), transpose_b, m, n, k) ? Path::kFloat32 : path;
}

}  // namespace loom::bf16

namespace loom {

bool HasBf16Hardware() { return bf16::DetectHardware() != bf16::Hardware::kNone; }

std::string DescribeBf16Support() {
  const bf16::Hardware hardware = bf16::DetectHardware();
  return bf16::CpuModelName() + ": " + bf16::HardwareName(hardware) +
         (hardware == bf16::Hardware::kNone ? " (\"bf16\" falls back to float32)"
                                            : " (\"bf16\" runs oneDNN's bf16 kernels)");
}

}  // namespace loom
