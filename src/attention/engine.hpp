// The large-input path of attention: the same mathematics as the step
// functions of attention.hpp, arranged for speed and bounded memory.
//
// - The heads' weights are packed side by side, so that each projection is one
//   matrix product for all heads: Q_all (n × H·d_k) = X · [W_Q1 … W_QH].
// - The queries are taken in blocks of rows. For each head and block, the
//   scaled scores, the softmax and the weighted sum are done one after the
//   other on a scratch block that stays in the CPU's cache; only the steps a
//   caller asks to keep get a whole n × m matrix.
// - The scale is folded into the score product (one multiplication by 1/scale),
//   the softmax is vectorised (kernels.hpp) and its division by the row sum is
//   applied to the head output (n × d_v), not to the weights (n × m).
// - Blocks are shared among threads, each calling BLAS single-threaded; the
//   projections use BLAS's own threads.
//
// Results agree with the step functions to rounding (the test suite checks
// 1e-12), but not bit for bit; attention.cpp uses this path for large inputs.
#pragma once

#include "model/model.hpp"

#include <armadillo>

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qkv {

// The heads' weights side by side: head h (0-based) owns columns
// h·d_k … (h+1)·d_k − 1 of W_Q and W_K and h·d_v … of W_V.
struct PackedWeights {
    arma::uword heads = 1;
    arma::uword d_k = 0;
    arma::uword d_v = 0;
    arma::mat W_Q;      // d_model × H·d_k
    arma::mat W_K;      // d_model × H·d_k
    arma::mat W_V;      // d_model × H·d_v
    arma::rowvec b_Q;   // 1 × H·d_k, empty when no head has a bias
    arma::rowvec b_K;
    arma::rowvec b_V;
    arma::mat W_O;      // H·d_v × d_out, empty when there is no output projection
    arma::rowvec b_O;   // 1 × d_out, empty when there is none
};

PackedWeights pack_weights(const Model& model);

// Which cells are blocked, read from the model without building an n × m matrix.
struct MaskView {
    bool causal = false;                    // key j is blocked for query i when j > i
    const arma::mat* matrix = nullptr;      // n × m, 0 = blocked
    const arma::rowvec* padding = nullptr;  // 1 × m, 0 = a padding key, blocked for every query

    bool any() const { return causal || matrix != nullptr || padding != nullptr; }
    bool blocked(arma::uword i, arma::uword j) const {
        return (causal && j > i) || (matrix != nullptr && (*matrix)(i, j) == 0.0) ||
               (padding != nullptr && (*padding)(j) == 0.0);
    }
};

MaskView mask_view(const Model& model);

// Milliseconds spent in each step, in the order of the steps (summed over heads).
using StepTimes = std::vector<std::pair<std::string, double>>;

struct EngineRequest {
    const arma::mat* X = nullptr;      // n × d_model: what the queries read (X, or X + P)
    const arma::mat* C = nullptr;      // m × d_model: what keys and values read (X itself unless cross-attention)
    const PackedWeights* weights = nullptr;
    double scale = 1.0;                // the divisor of the scores
    MaskView mask;
    // Steps to hand back whole (per-head ids with their 1-based head, others with 0).
    std::function<bool(std::string_view id, int head)> keep;
    int threads = 0;                   // 0: as many as BLAS uses
    // Per-head products by qkv's own kernels where the CPU has them
    // (kernels::products_supported()); false: always by BLAS.
    bool own_products = true;
    StepTimes* times = nullptr;        // when set, receives each step's time
};

struct EngineResult {
    std::map<std::pair<std::string, int>, arma::mat> kept;  // (id, head) → values
    arma::mat output;                                       // n × d_out
};

EngineResult run_engine(const EngineRequest& request);

// The BLAS in use, as `qkv --version` shows it ("none" without BLAS), with
// OPENBLAS_CORETYPE appended when it is set (it pins OpenBLAS's kernels).
std::string blas_name();
// Threads BLAS uses for one product (1 without BLAS).
int blas_threads();
// Sets the threads BLAS uses (no effect without BLAS).
void set_blas_threads(int threads);
// The default number of worker threads: BLAS's, or the number of CPUs without BLAS.
int default_threads();

}  // namespace qkv
