#ifndef LOOM_TRAIN_TRAINING_UPDATES_H_
#define LOOM_TRAIN_TRAINING_UPDATES_H_

// Internal to training_ops.cc: the update rules of training_ops.h, one class template per
// rule in the shape training_kernels.h's drivers expect (kNumRefs, Make, operator()).
#include <cmath>
#include <limits>
#include <type_traits>

#include "loom/train/training_kernels.h"

namespace loom::train::internal {

// Scalars follow the refs in input order. Loops run over restrict-qualified raw pointers
// so the compiler vectorizes them.

template <typename T>
struct GradientDescentUpdate {
  static constexpr int kNumRefs = 1;
  T lr;
  static GradientDescentUpdate Make(const KernelContext& c) { return {T(ScalarInput(c, 1))}; }
  void operator()(T* const* r, const T* __restrict g, int64_t n) const {
    T* __restrict var = r[0];
    for (int64_t i = 0; i < n; ++i) var[i] -= lr * g[i];
  }
  // The update with the finite check in its loop (see AdamUpdate::Checked): one pass over
  // var and g instead of two (the softmax regression step's update, 784 x 10: ~1.2 us in
  // two passes, bench/RESULTS.md session 14).
  bool Checked(T* const* r, const T* __restrict g, int64_t n) const {
    T* __restrict var = r[0];
    constexpr T kMax = std::numeric_limits<T>::max();
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      var[i] -= lr * g[i];
      bad |= static_cast<int>(!(std::abs(var[i]) <= kMax)) |
             static_cast<int>(!(std::abs(g[i]) <= kMax));
    }
    return bad != 0;
  }
};

// The Momentum ops' one attribute.
inline constexpr Attr<bool> kUseNesterov{"use_nesterov"};

template <typename T>
struct MomentumUpdate {
  static constexpr int kNumRefs = 2;
  T lr, momentum;
  bool nesterov;
  static MomentumUpdate Make(const KernelContext& c) {
    return {T(ScalarInput(c, 2)), T(ScalarInput(c, 3)), c.attr(kUseNesterov)};
  }
  void operator()(T* const* r, const T* __restrict g, int64_t n) const {
    T* __restrict var = r[0];
    T* __restrict accum = r[1];
    if (nesterov) {
      for (int64_t i = 0; i < n; ++i) {
        accum[i] = accum[i] * momentum + g[i];
        var[i] -= g[i] * lr + accum[i] * momentum * lr;
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        accum[i] = accum[i] * momentum + g[i];
        var[i] -= lr * accum[i];
      }
    }
  }
};

template <typename T>
struct AdamUpdate {
  static constexpr int kNumRefs = 3;
  T alpha, beta1, beta2, epsilon;
  static AdamUpdate Make(const KernelContext& c) {
    const T beta1_power = T(ScalarInput(c, 3));
    const T beta2_power = T(ScalarInput(c, 4));
    const T lr = T(ScalarInput(c, 5));
    // TF1 folds the bias corrections of m and v into the step size.
    const T alpha = lr * std::sqrt(T(1) - beta2_power) / (T(1) - beta1_power);
    return {alpha, T(ScalarInput(c, 6)), T(ScalarInput(c, 7)), T(ScalarInput(c, 8))};
  }
  void operator()(T* const* r, const T* __restrict g, int64_t n) const { Checked(r, g, n); }
  // The update with the drivers' finite check fused into its loop (training_kernels.h's
  // UpdateAndCheck): the same operations in the same order, so the same values; true when
  // the new var or g holds a NaN or Inf (`!(|x| <= max)`, as AnyNonFinite).
  bool Checked(T* const* r, const T* __restrict g, int64_t n) const {
    T* __restrict var = r[0];
    T* __restrict m = r[1];
    T* __restrict v = r[2];
    constexpr T kMax = std::numeric_limits<T>::max();
    const T one_minus_beta1 = T(1) - beta1, one_minus_beta2 = T(1) - beta2;
    int bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      m[i] += (g[i] - m[i]) * one_minus_beta1;
      v[i] += (g[i] * g[i] - v[i]) * one_minus_beta2;
      var[i] -= (m[i] * alpha) / (std::sqrt(v[i]) + epsilon);
      bad |= static_cast<int>(!(std::abs(var[i]) <= kMax)) |
             static_cast<int>(!(std::abs(g[i]) <= kMax));
    }
    return bad != 0;
  }
  // Checked on AVX-512F, bitwise the AVX2 + FMA copy's results (float32 only).
  // REQUIRES: CpuHasAvx512F().
  bool CheckedAvx512(T* const* r, const T* g, int64_t n) const requires std::is_same_v<T, float> {
    return AdamChunkAvx512(r[0], r[1], r[2], g, n, alpha, beta1, beta2, epsilon);
  }
};

template <typename T>
struct AdagradUpdate {
  static constexpr int kNumRefs = 2;
  T lr;
  static AdagradUpdate Make(const KernelContext& c) { return {T(ScalarInput(c, 2))}; }
  void operator()(T* const* r, const T* __restrict g, int64_t n) const {
    T* __restrict var = r[0];
    T* __restrict accum = r[1];
    for (int64_t i = 0; i < n; ++i) {
      accum[i] += g[i] * g[i];
      var[i] -= lr * g[i] / std::sqrt(accum[i]);
    }
  }
};

template <typename T>
struct RMSPropUpdate {
  static constexpr int kNumRefs = 3;
  T lr, rho, momentum, epsilon;
  static RMSPropUpdate Make(const KernelContext& c) {
    return {T(ScalarInput(c, 3)), T(ScalarInput(c, 4)), T(ScalarInput(c, 5)), T(ScalarInput(c, 6))};
  }
  void operator()(T* const* r, const T* __restrict g, int64_t n) const {
    T* __restrict var = r[0];
    T* __restrict ms = r[1];
    T* __restrict mom = r[2];
    const T one_minus_rho = T(1) - rho;
    for (int64_t i = 0; i < n; ++i) {
      ms[i] += (g[i] * g[i] - ms[i]) * one_minus_rho;
      mom[i] = mom[i] * momentum + lr * g[i] / std::sqrt(ms[i] + epsilon);
      var[i] -= mom[i];
    }
  }
};

template <typename T>
struct CenteredRMSPropUpdate {
  static constexpr int kNumRefs = 4;
  T lr, rho, momentum, epsilon;
  static CenteredRMSPropUpdate Make(const KernelContext& c) {
    return {T(ScalarInput(c, 4)), T(ScalarInput(c, 5)), T(ScalarInput(c, 6)), T(ScalarInput(c, 7))};
  }
  void operator()(T* const* r, const T* __restrict g, int64_t n) const {
    T* __restrict var = r[0];
    T* __restrict mg = r[1];
    T* __restrict ms = r[2];
    T* __restrict mom = r[3];
    const T one_minus_rho = T(1) - rho;
    for (int64_t i = 0; i < n; ++i) {
      ms[i] += (g[i] * g[i] - ms[i]) * one_minus_rho;
      mg[i] += (g[i] - mg[i]) * one_minus_rho;
      const T denom = ms[i] - mg[i] * mg[i] + epsilon;
      mom[i] = mom[i] * momentum + lr * g[i] / std::sqrt(denom);
      var[i] -= mom[i];
    }
  }
};

template <typename T>
struct FtrlUpdate {
  static constexpr int kNumRefs = 3;
  T lr, l1, l2, lr_power;
  static FtrlUpdate Make(const KernelContext& c) {
    return {T(ScalarInput(c, 3)), T(ScalarInput(c, 4)), T(ScalarInput(c, 5)), T(ScalarInput(c, 6))};
  }
  void operator()(T* const* r, const T* __restrict g, int64_t n) const {
    T* __restrict var = r[0];
    T* __restrict accum = r[1];
    T* __restrict linear = r[2];
    if (lr_power == T(-0.5)) {
      Run(var, accum, linear, g, n, [](T a) { return std::sqrt(a); });
    } else {
      const T p = -lr_power;
      Run(var, accum, linear, g, n, [p](T a) { return std::pow(a, p); });
    }
  }
  // power(a) = a^-lr_power.
  template <typename Power>
  void Run(T* __restrict var, T* __restrict accum, T* __restrict linear, const T* __restrict g,
           int64_t n, Power power) const {
    for (int64_t i = 0; i < n; ++i) {
      const T new_accum = accum[i] + g[i] * g[i];
      const T new_power = power(new_accum);
      linear[i] += g[i] - (new_power - power(accum[i])) / lr * var[i];
      const T sign = T((linear[i] > T(0)) - (linear[i] < T(0)));
      const T y = new_power / lr + T(2) * l2;
      var[i] = std::abs(linear[i]) > l1 ? (l1 * sign - linear[i]) / y : T(0);
      accum[i] = new_accum;
    }
  }
};

}  // namespace loom::train::internal

#endif  // LOOM_TRAIN_TRAINING_UPDATES_H_
