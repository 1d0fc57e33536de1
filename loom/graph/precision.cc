#include "loom/graph/precision.h"

#include "loom/base/error.h"

namespace loom {

namespace {
constexpr Precision kAll[] = {Precision::kFloat32, Precision::kBf16, Precision::kBf16Strict,
                              Precision::kBf16Emulated};
}  // namespace

const char* PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFloat32:
      return "float32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kBf16Strict:
      return "bf16-strict";
    case Precision::kBf16Emulated:
      return "bf16-emulated";
  }
  return "?";
}

Precision ParsePrecision(std::string_view name, std::string_view what) {
  for (Precision p : kAll) {
    if (name == PrecisionName(p)) return p;
  }
  throw InvalidArgument(what, " is \"", name,
                        "\"; use \"float32\", \"bf16\" (bf16 hardware, else float32), "
                        "\"bf16-strict\" (fail without bf16 hardware) or \"bf16-emulated\"");
}

}  // namespace loom
