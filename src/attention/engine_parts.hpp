// What the files of the large-input engine share (nothing outside
// src/attention/ includes this): engine.cpp runs the forward pass,
// engine_backward.cpp the backward pass, with the same products, threads and
// BLAS settings, defined in engine_parts.cpp and worker_pool.cpp; the forward
// pass calls the backward's run_backward, and neither file calls the other
// for anything else.
#pragma once

#include "attention/engine.hpp"

#include <armadillo>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace qkv::engine_parts {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start);

// C (rows × cols, leading dimension ldc) = alpha · op(A) · op(B) + beta · C,
// column-major as in BLAS: op(A) is rows × depth, op(B) is depth × cols.
void gemm(bool trans_a, bool trans_b, arma::uword rows, arma::uword cols, arma::uword depth, double alpha,
          const double* A, arma::uword lda, const double* B, arma::uword ldb, double* C, arma::uword ldc,
          double beta = 0.0);

// dst rows first_row … of an n × m matrix (leading dimension ld) ← the transpose of
// src (m × rows, stored column after column)
void copy_transposed(const double* src, arma::uword m, arma::uword rows, double* dst, arma::uword ld);

// The CPUs this process may run on (its affinity mask), 1 to 256.
int usable_cpus();

// Runs task(w) for w = 0 … workers − 1 side by side, w = 0 on this thread,
// the others on threads kept from one call to the next (worker_pool.cpp);
// returns how many ran: fewer when no more threads could be started. `task`
// must not throw.
int run_on_workers(int workers, const std::function<void(int)>& task);

// Calls work(item, worker) for items 0 … count−1 on `workers` threads (this
// one and workers − 1 more); each thread takes the next item until none is left.
// Under a memory limit, only as many threads as have room for their stacks
// and BLAS buffers (threads_within_limit); when no more threads can be
// started, those that did share the work. The
// first exception a call of `work` throws stops the others taking new items
// and is thrown again here once they have finished.
template <class Work>
void parallel_for(int workers, arma::uword count, const Work& work) {
    workers = static_cast<int>(std::min<arma::uword>(std::max(workers, 1), std::max<arma::uword>(count, 1)));
    workers = threads_within_limit(workers, 0);
    std::atomic<arma::uword> next{0};
    std::mutex failed;
    std::exception_ptr failure;
    const auto run = [&](int worker) {
        try {
            for (arma::uword item = next++; item < count; item = next++) {
                work(item, worker);
            }
        } catch (...) {
            const std::lock_guard<std::mutex> lock(failed);
            if (!failure) {
                failure = std::current_exception();
            }
            next = count;
        }
    };
    if (workers == 1) {
        run(0);
    } else {
        run_on_workers(workers, run);
    }
    if (failure) {
        std::rethrow_exception(failure);
    }
}

// Q of every query head, K and V of every key/value head, column after column:
// Q_all (n × H·d_k), K_all (m × G·d_k), V_all (m × G·d_v); each head's block of
// each is contiguous.
struct Projections {
    arma::uword n = 0;  // query rows
    arma::uword m = 0;  // key and value rows
    double* Q_all = nullptr;
    double* K_all = nullptr;
    double* V_all = nullptr;
    // with qk_norm and the backward pass: Q_all and K_all as projected, before the norm
    const double* Q_unnormed = nullptr;
    const double* K_unnormed = nullptr;
};

// The backward pass (engine_backward.cpp), after the forward pass has left the
// rotated Q_all, K_all and V_all in `p` and the concatenation (n × H·d_v, or
// nullptr without W_O) in `concat`: every gradient, into `result`, in the
// workspace's memory.
void run_backward(const EngineRequest& request, const Projections& p, const arma::mat* concat,
                  EngineWorkspace& workspace, int threads, EngineResult& result, StepTimes& times);

// The workers ran side by side: the wall time of a phase shared among its
// parts in proportion to the time the workers spent in each (each scratch's
// `times`, one entry per part).
template <std::size_t parts, class Scratch>
std::array<double, parts> share_wall_time(double wall, const std::vector<Scratch>& scratch) {
    std::array<double, parts> per_part{};
    double busy = 0.0;
    for (const auto& local : scratch) {
        for (std::size_t part = 0; part < parts; ++part) {
            per_part[part] += local.times[part];
            busy += local.times[part];
        }
    }
    for (double& ms : per_part) {
        ms = busy > 0.0 ? wall * ms / busy : 0.0;
    }
    return per_part;
}

// Rows of queries per block of the forward pass for n queries and m keys
// (QKV_BLOCK_ROWS, for measuring, sets it).
arma::uword block_rows(arma::uword n, arma::uword m);
// The same, made smaller where the heads have fewer blocks than three for
// each of `workers`, down to k_min_balanced_rows rows (the memory estimate
// counts the larger).
arma::uword block_rows(arma::uword n, arma::uword m, int workers, arma::uword heads);
inline constexpr arma::uword k_min_balanced_rows = 48;

}  // namespace qkv::engine_parts
