#ifndef LOOM_OPS_BF16_H_
#define LOOM_OPS_BF16_H_

// The bf16 precision policy's kernel side (the policy itself: loom/graph/precision.h):
// bfloat16 rounding, the CPU's bf16 hardware, and which path a product node takes.
// Internal to the ops layer.
//
// A product under a bf16 policy takes one of three paths, chosen per call from its node's
// "precision" attribute and the CPU (never from a timing):
//   kHardware  oneDNN's bf16 primitives (bf16 src/weights, float32 accumulation and dst),
//              where the CPU has AMX or AVX-512 BF16 (oneDNN's effective ISA says);
//   kEmulated  the inputs rounded to bf16 here (RoundToBf16), then the float32 kernel:
//              "bf16-emulated" anywhere, and "bf16" on hardware when oneDNN declines a shape;
//   kFloat32   the float32 kernel: "float32", and "bf16" on a CPU without bf16 hardware
//              (logged once per process). "bf16-strict" there throws FailedPrecondition.
//              Products that bf16 was measured to slow down on the CPU's kind of bf16
//              hardware take it under every bf16 policy: MatMul's narrow products on
//              AVX-512 BF16 (ProductRunsInFloat32), Conv2D's shallow convolutions
//              (nn_conv.cc's ConvPath).
// Thread-safety: all functions are thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "loom/graph/op_def.h"
#include "loom/graph/precision.h"

namespace loom::bf16 {

// ---- the node attribute ----

// The products' "precision" attribute: optional (absent = "float32"), one of
// PrecisionName's values.
inline constexpr Attr<std::string> kPrecision{"precision"};
AttrDef PrecisionAttrDef();
// Adds the attribute for a product built with `precision`; nothing for float32, so float32
// graphs are unchanged.
void AddPrecisionAttr(Precision precision, AttrMap& attrs);
// The node's policy: its attribute, kFloat32 when absent.
Precision NodePrecision(const Node& node);

// ---- rounding ----

// float32 -> bfloat16 bits, round to nearest even (the conversion of oneDNN's reorders
// and of AVX-512 BF16's vcvtneps2bf16). NaN stays NaN (quieted); overflow rounds to inf.
inline uint16_t FloatToBf16Bits(float x) {
  uint32_t bits;
  __builtin_memcpy(&bits, &x, sizeof(bits));
  const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x40u;
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}
inline float Bf16BitsToFloat(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float x;
  __builtin_memcpy(&x, &bits, sizeof(x));
  return x;
}
// x rounded to the nearest bfloat16 (8 significant bits), as a float32.
inline float RoundToBf16(float x) { return Bf16BitsToFloat(FloatToBf16Bits(x)); }

// The array conversions below use AVX-512 BF16 (vcvtne2ps2bf16) where the CPU has it,
// chosen at run time, and give the scalar functions' bits exactly (denormals too, which the
// instruction alone would flush to zero).
bool ConvertsWithAvx512Bf16();
// out[i] = RoundToBf16(in[i]) for i < n (in == out allowed), split over `pool`.
void RoundToBf16(const float* in, float* out, int64_t n, ThreadPool& pool);
// out[i] = FloatToBf16Bits(in[i]).
void FloatToBf16(const float* in, uint16_t* out, int64_t n, ThreadPool& pool);
// The same on the calling thread.
void FloatToBf16(const float* in, uint16_t* out, int64_t n);
// A new float32 tensor holding `t` rounded to bf16. REQUIRES: t is float32.
Tensor Rounded(const Tensor& t, ThreadPool& pool);

// ---- the CPU ----

enum class Hardware {
  kNone,        // neither: bf16 products are emulated or fall back to float32
  kAvx512Bf16,  // AVX-512 BF16 (vdpbf16ps)
  kAmx,         // AMX-BF16 tiles (with AVX-512 BF16)
};
const char* HardwareName(Hardware hardware);
// What oneDNN will use on this CPU (its effective ISA: the CPU's, capped by ONEDNN_MAX_CPU_ISA).
Hardware DetectHardware();
// The CPU's brand string from cpuid ("AMD EPYC 7B13", "Intel(R) Xeon(R) ..."), or
// "unknown CPU" off x86-64.
std::string CpuModelName();

// ---- the path ----

enum class Path { kFloat32, kEmulated, kHardware };
const char* PathName(Path path);
// The path of a float32 product under `requested` on a CPU with `hardware`. kBf16 without
// hardware gives kFloat32 and logs a warning the first time in the process; kBf16Strict
// without hardware throws FailedPrecondition naming `node` (its description), the CPU and
// the policy.
Path ChoosePath(Precision requested, Hardware hardware, std::string_view node);
// The path of the kernel's node on this CPU; kFloat32 for float64 products.
Path KernelPath(const KernelContext& c, DType dtype);
// How many fallback warnings this process has logged (0 or 1), for tests.
int FallbackWarnings();

// ---- shapes that bf16 slows down, per kind of hardware ----

// Whether a MatMul [m, k] x [k, n] (b stored transposed when transpose_b) under a bf16
// policy runs in float32 on `hardware`, operands unrounded, because its bf16 kernel was
// measured slower there than the float32 one: a rule on the shape and the hardware kind,
// never a timing, so two runs compute the same bits (bench/bf16_kernels_bench.cc has the
// data). On AVX-512 BF16 (AMD EPYC Zen 4, oneDNN 2.6's brg:avx512_core_bf16, 1 thread;
// bench/RESULTS.md, session 16): a narrow product (n <= 16, b not transposed, 2^16 to 2^22
// multiply-adds: the measured range, within the shapes blas.h's AVX-512 narrow kernels
// take; smaller ones were not measured and stay bf16) was as fast or up to 1.8x
// faster in float32: the MLP's logits 256x10x512 0.025 against 0.030 ms in bf16, their
// weight gradient 512x10x256 0.024 against 0.043, the convnet's 64x10x1024 0.012 against
// 0.016, the predict DNN's 1024x10x128 0.031 both. (The logits' input gradient, b
// transposed, was 1.5x faster in bf16.) On AMX and without bf16 hardware: no such rule
// (AMX's choices were measured without it).
bool ProductRunsInFloat32(Hardware hardware, bool transpose_b, int64_t m, int64_t n, int64_t k);
// KernelPath, then kFloat32 where ProductRunsInFloat32 says so for this CPU. The emulated
// policy follows the rule too, so it still computes the hardware path's numbers.
Path ProductPath(const KernelContext& c, DType dtype, bool transpose_b, int64_t m, int64_t n,
                 int64_t k);

}  // namespace loom::bf16

#endif  // LOOM_OPS_BF16_H_
