#include "loom/estimator/initializers.h"

#include <algorithm>
#include <cmath>

#include "loom/ops/array.h"

namespace loom::initializers {
namespace {

void RequireDefined(const Scope& scope, const Shape& shape, const char* what) {
  if (!shape.fully_defined()) {
    throw InvalidArgument(what, " initializer under '", scope.prefix(),
                          "' needs a fully defined shape, got ", shape);
  }
}

}  // namespace

Fans ComputeFans(const Shape& shape) {
  const int rank = shape.rank();
  if (rank == 0) return {1, 1};
  if (rank == 1) return {double(shape.dim(0)), double(shape.dim(0))};
  if (rank == 2) return {double(shape.dim(0)), double(shape.dim(1))};
  double receptive_field = 1;
  for (int i = 0; i < rank - 2; ++i) receptive_field *= double(shape.dim(i));
  return {double(shape.dim(-2)) * receptive_field, double(shape.dim(-1)) * receptive_field};
}

Initializer VarianceScaling(VarianceScalingOptions options) {
  if (!(options.scale > 0)) {
    throw InvalidArgument("VarianceScaling: scale must be positive, got ", options.scale);
  }
  return [options](const Scope& s, const Shape& shape, DType dtype) {
    RequireDefined(s, shape, "VarianceScaling");
    const Fans fans = ComputeFans(shape);
    double scale = options.scale;
    switch (options.mode) {
      case FanMode::kFanIn:
        scale /= std::max(1.0, fans.fan_in);
        break;
      case FanMode::kFanOut:
        scale /= std::max(1.0, fans.fan_out);
        break;
      case FanMode::kFanAvg:
        scale /= std::max(1.0, (fans.fan_in + fans.fan_out) / 2);
        break;
    }
    switch (options.distribution) {
      case Distribution::kTruncatedNormal:
        return loom::TruncatedNormal(s, shape, dtype, 0.0, std::sqrt(scale) / 0.87962566103423978,
                                     options.seed);
      case Distribution::kNormal:
        return loom::RandomNormal(s, shape, dtype, 0.0, std::sqrt(scale), options.seed);
      case Distribution::kUniform: {
        const double limit = std::sqrt(3.0 * scale);
        return loom::RandomUniform(s, shape, dtype, -limit, limit, options.seed);
      }
    }
    LOOM_CHECK(false) << "unknown distribution";
    return Output();
  };
}

Initializer GlorotUniform(SeedOptions options) {
  return VarianceScaling({.scale = 1.0,
                          .mode = FanMode::kFanAvg,
                          .distribution = Distribution::kUniform,
                          .seed = options.seed});
}

Initializer GlorotNormal(SeedOptions options) {
  return VarianceScaling({.scale = 1.0,
                          .mode = FanMode::kFanAvg,
                          .distribution = Distribution::kTruncatedNormal,
                          .seed = options.seed});
}

Initializer HeNormal(SeedOptions options) {
  return VarianceScaling({.scale = 2.0,
                          .mode = FanMode::kFanIn,
                          .distribution = Distribution::kTruncatedNormal,
                          .seed = options.seed});
}

Initializer HeUniform(SeedOptions options) {
  return VarianceScaling({.scale = 2.0,
                          .mode = FanMode::kFanIn,
                          .distribution = Distribution::kUniform,
                          .seed = options.seed});
}

Initializer RandomNormal(NormalOptions options) {
  return [options](const Scope& s, const Shape& shape, DType dtype) {
    RequireDefined(s, shape, "RandomNormal");
    return loom::RandomNormal(s, shape, dtype, options.mean, options.stddev, options.seed);
  };
}

Initializer TruncatedNormal(NormalOptions options) {
  return [options](const Scope& s, const Shape& shape, DType dtype) {
    RequireDefined(s, shape, "TruncatedNormal");
    return loom::TruncatedNormal(s, shape, dtype, options.mean, options.stddev, options.seed);
  };
}

Initializer RandomUniform(UniformOptions options) {
  if (!(options.minval < options.maxval)) {
    throw InvalidArgument("RandomUniform initializer: minval ", options.minval,
                          " must be below maxval ", options.maxval);
  }
  return [options](const Scope& s, const Shape& shape, DType dtype) {
    RequireDefined(s, shape, "RandomUniform");
    return loom::RandomUniform(s, shape, dtype, options.minval, options.maxval, options.seed);
  };
}

Initializer Zeros() {
  return [](const Scope& s, const Shape& shape, DType dtype) {
    RequireDefined(s, shape, "Zeros");
    return loom::Zeros(s, shape, dtype);
  };
}

Initializer Ones() {
  return [](const Scope& s, const Shape& shape, DType dtype) {
    RequireDefined(s, shape, "Ones");
    return loom::Ones(s, shape, dtype);
  };
}

Initializer Constant(double value) {
  return [value](const Scope& s, const Shape& shape, DType dtype) {
    RequireDefined(s, shape, "Constant");
    return Fill(s, shape.dims(), AsOutput(s, value, dtype));
  };
}

Initializer Constant(const Tensor& value) {
  return [value](const Scope& s, const Shape& shape, DType dtype) -> Output {
    if (value.dtype() != dtype || !(value.shape() == shape)) {
      throw InvalidArgument("Constant initializer under '", s.prefix(), "': value is ",
                            DTypeName(value.dtype()), value.shape(), " but the variable is ",
                            DTypeName(dtype), shape);
    }
    return Const(s, value);
  };
}

}  // namespace loom::initializers
