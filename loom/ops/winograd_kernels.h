#ifndef LOOM_OPS_WINOGRAD_KERNELS_H_
#define LOOM_OPS_WINOGRAD_KERNELS_H_

// The AVX-512 building blocks of Winograd F(MxM, 5x5), M = 2 or 4 (winograd_conv.h says
// what runs them and when). Internal to the ops layer: winograd_conv.cc calls them on
// blocks of tiles.
//
// A tile is an M x M block of outputs, read from the N x N input patch (N = M + 4) its
// 5x5 windows cover; tile t of a plane is (n, th, tw) in row-major order, its patch
// starting at input row M th - pad_top and column M tw - pad_left (rows and columns
// outside the image read as zeros). The N*N "points" p = N i + j are the entries of the
// transformed patch. Per block of BlockOf(M) tiles:
//   V[p][t][c]  = (B^T d B)[p], input patch d of channel c    (InputTiles)
//   M[p][t][k]  = sum_c V[p][t][c] U[p][c][k]                  (TileProducts)
//   y           = A^T M A, the tile's M x M outputs             (OutputTiles)
// with U[p][c][k] = (G w G^T)[p] of the 5x5 filter w[., ., c, k] (TransformFilter). The
// filter gradient runs the adjoint: dM = A dY A^T (OutputGradTiles), Z[p][c][k] +=
// sum_t V[p][t][c] dM[p][t][k] (FilterProducts), dw = G^T Z G (FilterFromPoints).
// Interpolation points: F(2x2) 0, 1, -1, 1/2, -2 and infinity (the float32 error of the
// five finite-point sets tried, against float64: 1.1e-6 of the largest output for this
// set, 2.3e-6 for 0, +-1, +-2); F(4x4) 0, +-1, +-1/2, +-2 and infinity (5.7e-6).
// Output channels are padded to kp (a multiple of 16) inside V/M/U/Z, with zeros.
//
// REQUIRES (every function): the CPU has AVX-512F. Thread-safety: pure functions.
#include <cstdint>

namespace loom::winograd {

// The transformed tile's entries for output tiles of M x M.
inline constexpr int PointsOf(int m) { return (m + 4) * (m + 4); }
// Tiles per block (a multiple of every product kernel's rows, 6 and 12): the block's V, M
// and the transformed filter stay in L2.
inline constexpr int64_t BlockOf(int m) { return m == 4 ? 12 : 24; }

// An NHWC convolution over one plane of tiles: x [batch, in_h, in_w, in_c] ->
// y [batch, out_h, out_w, out_c], stride 1, 5x5 window at offset (-pad_top, -pad_left),
// output tiles of tile x tile (2 or 4).
struct Plane {
  int64_t batch, in_h, in_w, in_c, out_h, out_w, out_c, pad_top, pad_left;
  int tile;
  int64_t tiles_h() const { return (out_h + tile - 1) / tile; }
  int64_t tiles_w() const { return (out_w + tile - 1) / tile; }
  int64_t tiles() const { return batch * tiles_h() * tiles_w(); }
};

// Rounds n up to a multiple of 16 (a vector of floats).
inline int64_t PadTo16(int64_t n) { return (n + 15) / 16 * 16; }

// u[p][c][k] (k < kp; zero from out_c on) from w[5][5][in_c][out_c] (HWIO).
void TransformFilter(int tile, const float* w, int64_t in_c, int64_t out_c, int64_t kp, float* u);

// v[p][r][c] (p stride block * ldv, block = BlockOf(plane.tile)) for tiles t0 .. t0 +
// count - 1 (r = t - t0) of plane.in_c channels; lanes from in_c up to ldv are written as
// zeros, rows from count up to block too. REQUIRES: count <= block, ldv >= in_c.
void InputTiles(const Plane& plane, const float* x, int64_t t0, int64_t count, int64_t ldv,
                float* v);

// m[p][r][k] = sum_c v[p][r][c] u[p][c][k] for p < points, all `block` rows, kp columns.
void TileProducts(int points, int64_t block, const float* v, int64_t in_c, int64_t ldv,
                  const float* u, int64_t kp, float* m);

// Writes the outputs of tiles t0 .. t0 + count - 1 from m (kp columns, out_c of them real),
// plus bias[k] when bias is not null, then max(., 0) when relu. Returns false when an
// output before the ReLU is not finite (the caller reruns the direct path: the transforms
// mix a tile's inputs, so a NaN or Inf would spread to its whole tile).
bool OutputTiles(const Plane& plane, const float* m, int64_t kp, int64_t t0, int64_t count,
                 const float* bias, bool relu, float* y);

// dm[p][r][k] = (A dY A^T)[p] of the tile x tile output gradient of tile t0 + r (dy has the plane's
// output shape); rows from count on are zeros.
void OutputGradTiles(const Plane& plane, const float* dy, int64_t t0, int64_t kp, int64_t count,
                     float* dm);

// z[p][c][k] += sum_r v[p][r][c] dm[p][r][k] over the `block` rows, for p < points,
// c < ldv (a multiple of 16) and k < kp.
void FilterProducts(int points, int64_t block, const float* v, int64_t ldv, const float* dm,
                    int64_t kp, float* z);

// dw[5][5][in_c][out_c] = G^T Z G from z[p][c][k] (c < ldv, k < kp).
void FilterFromPoints(int tile, const float* z, int64_t in_c, int64_t ldv, int64_t out_c,
                      int64_t kp, float* dw);

}  // namespace loom::winograd

#endif  // LOOM_OPS_WINOGRAD_KERNELS_H_
