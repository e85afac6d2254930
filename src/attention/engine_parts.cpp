// What both files of the large-input engine use (engine_parts.hpp): the
// products' BLAS call, the timer and the blocks' sizes, so that engine.cpp and
// engine_backward.cpp each call this file and neither calls the other's.
#include "attention/engine_parts.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace qkv::engine_parts {

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// C (rows × cols, leading dimension ldc) = alpha · op(A) · op(B), column-major
// as in BLAS: op(A) is rows × depth, op(B) is depth × cols.
void gemm(bool trans_a, bool trans_b, arma::uword rows, arma::uword cols, arma::uword depth, double alpha,
          const double* A, arma::uword lda, const double* B, arma::uword ldb, double* C, arma::uword ldc, double beta) {
#ifdef ARMA_USE_BLAS
    const char ta = trans_a ? 'T' : 'N';
    const char tb = trans_b ? 'T' : 'N';
    const auto m = static_cast<arma::blas_int>(rows);
    const auto n = static_cast<arma::blas_int>(cols);
    const auto k = static_cast<arma::blas_int>(depth);
    const auto la = static_cast<arma::blas_int>(lda);
    const auto lb = static_cast<arma::blas_int>(ldb);
    const auto lc = static_cast<arma::blas_int>(ldc);
    arma::blas::gemm<double>(&ta, &tb, &m, &n, &k, &alpha, A, &la, B, &lb, &beta, C, &lc);
#else
    // Without BLAS: copy the operands out of their strided storage and let
    // Armadillo's own product do the work.
    auto load = [](const double* data, arma::uword r, arma::uword c, arma::uword ld) {
        arma::mat M(r, c);
        for (arma::uword j = 0; j < c; ++j) {
            std::copy(data + j * ld, data + j * ld + r, M.colptr(j));
        }
        return M;
    };
    const arma::mat a = trans_a ? arma::mat(load(A, depth, rows, lda).t()) : load(A, rows, depth, lda);
    const arma::mat b = trans_b ? arma::mat(load(B, cols, depth, ldb).t()) : load(B, depth, cols, ldb);
    const arma::mat product = alpha == 1.0 ? arma::mat(a * b) : arma::mat(alpha * a * b);
    for (arma::uword j = 0; j < cols; ++j) {
        for (arma::uword i = 0; i < rows; ++i) {
            C[i + j * ldc] = (beta == 0.0 ? 0.0 : beta * C[i + j * ldc]) + product(i, j);
        }
    }
#endif
}

// dst rows first_row … of an n × m matrix (leading dimension ld) ← the transpose of
// src (m × rows, stored column after column)
void copy_transposed(const double* src, arma::uword m, arma::uword rows, double* dst, arma::uword ld) {
    for (arma::uword j = 0; j < m; ++j) {
        for (arma::uword i = 0; i < rows; ++i) {
            dst[i + j * ld] = src[j + i * m];
        }
    }
}

// Rows of queries per block: about 64 or more, so that each panel of K read for
// the block serves many queries, and the block's scores (m × rows doubles) at
// most about 1 MiB, the size of a core's L2 cache, up to about 256 rows.
arma::uword block_rows(arma::uword n, arma::uword m) {
    arma::uword rows = std::clamp<arma::uword>(131072 / std::max<arma::uword>(m, 1), 64, k_max_block_rows);
    rows -= rows % 6;  // whole tiles of 6 queries for the products (kernels.cpp)
    // for measuring other sizes (docs/performance.md)
    if (const char* forced = std::getenv("QKV_BLOCK_ROWS")) {
        rows = static_cast<arma::uword>(std::clamp(std::atol(forced), 1L, 4096L));
    }
    return std::min(rows, n);
}

arma::uword block_rows(arma::uword n, arma::uword m, int workers, arma::uword heads) {
    const arma::uword rows = block_rows(n, m);
    if (std::getenv("QKV_BLOCK_ROWS") != nullptr || n == 0) {
        return rows;
    }
    // at least three items for each worker where the blocks can be that many:
    // the workers take them one after the other, and the last round is short
    const arma::uword blocks = (n + rows - 1) / rows;
    const arma::uword per_head = std::max<arma::uword>(heads, 1);
    const arma::uword wanted = (3 * static_cast<arma::uword>(std::max(workers, 1)) + per_head - 1) / per_head;
    const arma::uword most = std::max<arma::uword>(n / k_min_balanced_rows, 1);
    const arma::uword chosen = std::max(blocks, std::min(wanted, most));
    arma::uword balanced = (n + chosen - 1) / chosen;
    balanced += (6 - balanced % 6) % 6;  // whole tiles of 6
    return std::min(rows, balanced);
}

}  // namespace qkv::engine_parts
