#ifndef LOOM_OPS_MATMUL_H_
#define LOOM_OPS_MATMUL_H_

// Matrix products through the BLAS (blas.h), float32 and float64.
//
//   Output logits = MatMul(s.WithOpName("MatMul"), x, w);   // [n,784] x [784,10]
//
// A shape mismatch fails at construction naming the node and both shapes:
//   MatMul 'dense/MatMul': shapes [32,784] x [512,10]: inner dimensions 784 and 512 differ
// Gradients follow TF's MatMulGrad for every transpose combination; the gradient products
// take the forward node's precision.
#include "loom/graph/op_def.h"
#include "loom/graph/precision.h"

namespace loom {

struct MatMulOptions {
  // Multiply by a's / b's transpose (without materializing it). Default: false.
  bool transpose_a = false;
  bool transpose_b = false;
  // The product's precision policy (loom/graph/precision.h), recorded in the node's
  // "precision" attribute. Default: kFloat32.
  Precision precision = Precision::kFloat32;
};

// a [m,k] x b [k,n] -> [m,n] (after the optional transposes). Rank 2 each.
Output MatMul(const Scope& scope, Input a, Input b, MatMulOptions options = {});

// Batched: a [..., m, k] x b [..., k, n] -> [..., m, n], rank >= 2 each with at least one
// of rank >= 3. The batch dims broadcast like NumPy (a [8,1,m,k] x b [4,k,n] ->
// [8,4,m,n]); the gradient sums over broadcast batch dims.
Output BatchMatMul(const Scope& scope, Input a, Input b, MatMulOptions options = {});

// Registered by RegisterMathOps (math.h).
void RegisterMatMulOps(OpRegistry& registry);

}  // namespace loom

#endif  // LOOM_OPS_MATMUL_H_
