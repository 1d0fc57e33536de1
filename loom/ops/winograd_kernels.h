#ifndef LOOM_OPS_WINOGRAD_KERNELS_H_
#define LOOM_OPS_WINOGRAD_KERNELS_H_

// The AVX-512 building blocks of Winograd F(2x2, 5x5) (winograd_conv.h says what runs them
// and when). Internal to the ops layer: winograd_conv.cc calls them on blocks of tiles.
//
// A tile is a 2x2 block of outputs, read from the 6x6 input patch its four 5x5 windows
// cover; tile t of a plane is (n, th, tw) in row-major order, its patch starting at input
// row 2 th - pad_top and column 2 tw - pad_left (rows and columns outside the image read
// as zeros). The 36 "points" p = 6 i + j are the entries of the transformed 6x6 patch.
// Per block of kTileBlock tiles:
//   V[p][t][c]  = (B^T d B)[p], input patch d of channel c    (InputTiles)
//   M[p][t][k]  = sum_c V[p][t][c] U[p][c][k]                  (TileProducts)
//   y           = A^T M A, the tile's 2x2 outputs               (OutputTiles)
// with U[p][c][k] = (G w G^T)[p] of the 5x5 filter w[., ., c, k] (TransformFilter). The
// filter gradient runs the adjoint: dM = A dY A^T (OutputGradTiles), Z[p][c][k] +=
// sum_t V[p][t][c] dM[p][t][k] (FilterProducts), dw = G^T Z G (FilterFromPoints).
// The interpolation points are 0, 1, -1, 1/2, -2 and infinity (the float32 error of the
// five finite-point sets tried, against float64: 1.1e-6 of the largest output for this
// set, 2.3e-6 for 0, +-1, +-2).
// Output channels are padded to kp (a multiple of 16) inside V/M/U/Z, with zeros.
//
// REQUIRES (every function): the CPU has AVX-512F. Thread-safety: pure functions.
#include <cstdint>

namespace loom::winograd {

inline constexpr int kPoints = 36;      // a 6x6 transformed tile
inline constexpr int kTileBlock = 24;   // tiles per block (a multiple of every kernel's rows)

// An NHWC convolution over one plane of tiles: x [batch, in_h, in_w, in_c] ->
// y [batch, out_h, out_w, out_c], stride 1, 5x5 window at offset (-pad_top, -pad_left).
struct Plane {
  int64_t batch, in_h, in_w, in_c, out_h, out_w, out_c, pad_top, pad_left;
  int64_t tiles_h() const { return (out_h + 1) / 2; }
  int64_t tiles_w() const { return (out_w + 1) / 2; }
  int64_t tiles() const { return batch * tiles_h() * tiles_w(); }
};

// Rounds n up to a multiple of 16 (a vector of floats).
inline int64_t PadTo16(int64_t n) { return (n + 15) / 16 * 16; }

// u[p][c][k] (k < kp; zero from out_c on) from w[5][5][in_c][out_c] (HWIO).
void TransformFilter(const float* w, int64_t in_c, int64_t out_c, int64_t kp, float* u);

// v[p][r][c] (p stride kTileBlock * ldv) for tiles t0 .. t0 + count - 1 (r = t - t0) of
// plane.in_c channels; lanes from in_c up to ldv are written as zeros, rows from count up
// to kTileBlock too. REQUIRES: count <= kTileBlock, ldv >= in_c.
void InputTiles(const Plane& plane, const float* x, int64_t t0, int64_t count, int64_t ldv,
                float* v);

// m[p][r][k] = sum_c v[p][r][c] u[p][c][k] for all kTileBlock rows, kp columns.
void TileProducts(const float* v, int64_t in_c, int64_t ldv, const float* u, int64_t kp, float* m);

// Writes the outputs of tiles t0 .. t0 + count - 1 from m (kp columns, out_c of them real),
// plus bias[k] when bias is not null, then max(., 0) when relu. Returns false when an
// output before the ReLU is not finite (the caller reruns the direct path: the transforms
// mix a tile's inputs, so a NaN or Inf would spread to its whole tile).
bool OutputTiles(const Plane& plane, const float* m, int64_t kp, int64_t t0, int64_t count,
                 const float* bias, bool relu, float* y);

// dm[p][r][k] = (A dY A^T)[p] of the 2x2 output gradient of tile t0 + r (dy has the plane's
// output shape); rows from count on are zeros.
void OutputGradTiles(const Plane& plane, const float* dy, int64_t t0, int64_t kp, int64_t count,
                     float* dm);

// z[p][c][k] += sum_r v[p][r][c] dm[p][r][k] over the kTileBlock rows, for c < ldv (a
// multiple of 16) and k < kp.
void FilterProducts(const float* v, int64_t ldv, const float* dm, int64_t kp, float* z);

// dw[5][5][in_c][out_c] = G^T Z G from z[p][c][k] (c < ldv, k < kp).
void FilterFromPoints(const float* z, int64_t in_c, int64_t ldv, int64_t out_c, int64_t kp,
                      float* dw);

}  // namespace loom::winograd

#endif  // LOOM_OPS_WINOGRAD_KERNELS_H_
