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
#endif

namespace loom::bf16 {
namespace {

// Rounding streams at memory speed; below this many elements a split costs more than it saves.
constexpr int64_t kMinChunk = int64_t{1} << 15;

std::atomic<int> fallback_warnings{0};

bool HasAll(dnnl_cpu_isa_t isa, dnnl_cpu_isa_t bits) { return (isa & bits) == bits; }

}  // namespace

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
  pool.ParallelFor(n, kMinChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = RoundToBf16(in[i]);
  });
}

void FloatToBf16(const float* in, uint16_t* out, int64_t n, ThreadPool& pool) {
  pool.ParallelFor(n, kMinChunk, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = FloatToBf16Bits(in[i]);
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
