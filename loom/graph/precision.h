#ifndef LOOM_GRAPH_PRECISION_H_
#define LOOM_GRAPH_PRECISION_H_

// The precision policy of matrix products (MatMul, Conv2D and its backprops): Keras's
// `mixed_bfloat16`, PyTorch's CPU autocast. Variables, optimizer slots, activations and the
// loss stay float32; a product under a bf16 policy reads its two float32 operands rounded to
// bfloat16 (round to nearest even), multiplies and accumulates in float32 and writes
// float32. Float64 products ignore the policy.
//
// How it reaches the kernels: explicitly. Each product node carries it as its string
// attribute "precision" (absent means "float32"), so a GraphDef shows and round-trips it.
// A builder writes the value its options give (MatMulOptions::precision, Conv2D's
// argument, the layers' options, which model functions fill from RunConfig::precision);
// gradient products copy their forward node's value. docs/training.md ("Mixed precision")
// describes the policies.
#include <string_view>

namespace loom {

enum class Precision {
  kFloat32,  // "float32": float32 products (the default)
  // "bf16": bf16 inputs on the CPU's bf16 hardware (AMX, else AVX-512 BF16) through
  // oneDNN; on a CPU with neither, a float32 product, with one warning per process.
  kBf16,
  // "bf16-strict": as kBf16, but a CPU without bf16 hardware fails the step with
  // FailedPrecondition naming the CPU, the node and the policy.
  kBf16Strict,
  // "bf16-emulated": the inputs rounded to bf16 in software and a float32 product, on any
  // CPU: the same numbers as the hardware path up to float32 summation order. For tests
  // and for checking a model's accuracy in bf16 on a machine without the hardware.
  kBf16Emulated,
};

// "float32", "bf16", "bf16-strict", "bf16-emulated": the attribute's and the job file's
// spelling.
const char* PrecisionName(Precision precision);
// The inverse of PrecisionName. Throws InvalidArgument naming `what` (e.g.
// "job.toml: [train] precision") and the accepted values.
Precision ParsePrecision(std::string_view name, std::string_view what);

}  // namespace loom

#endif  // LOOM_GRAPH_PRECISION_H_
