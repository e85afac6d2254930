// The large-input path of attention: the same mathematics as the step
// functions of attention.hpp, arranged for speed and bounded memory.
//
// - The heads' weights are packed side by side, so that Q, K and V for every
//   head are one matrix product: [Q_all K_all V_all] = X · W_QKV (with
//   cross-attention, Q_all = X · W_Q and [K_all V_all] = C · [W_K W_V]).
//   With grouped-query attention only the G key/value heads are projected, and
//   the query heads of a group read the same K and V.
// - RoPE turns each head's Q and K in place, once, after the projections.
// - The queries are taken in blocks of rows. For each head and block, the
//   scaled scores (plus ALiBi's bias, computed on the fly), the mask, the
//   softmax (with the head's sink) and the weighted sum are done one after the
//   other on a scratch block that stays in the CPU's cache; only the steps a
//   caller asks to keep get a whole n × m matrix. A causal mask or a sliding
//   window limits a block to the keys its rows may see, so that a window of W
//   keys costs O(n·W), not O(n²).
// - The scale is folded into the score product (one multiplication by 1/scale),
//   the softmax is vectorised (kernels.hpp) and its division by the row sum is
//   applied to the head output (n × d_v), not to the weights (n × m).
// - On CPUs with AVX-512 the score and weighted-sum products are qkv's own
//   (kernels.hpp), on K and V packed once per head; elsewhere they are BLAS's.
// - Every step is shared among qkv's own threads, each calling BLAS
//   single-threaded: the projections by slices of columns, the heads by
//   (head, block) pieces.
//
// Results agree with the step functions to rounding (the test suite checks
// 1e-12), but not bit for bit; attention.cpp uses this path for large inputs.
#pragma once

#include "attention/step_id.hpp"
#include "model/model.hpp"

#include <armadillo>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qkv {

// The heads' weights side by side, all three projections in one matrix:
// W_QKV = [W_Q1 … W_QH  W_K1 … W_KG  W_V1 … W_VG], so that one product gives
// Q for every query head and K, V for every key/value head (G = H without
// grouped-query attention). Query head h (0-based) owns columns
// h·d_k … (h+1)·d_k − 1 of the queries' part, key/value head g likewise in the
// keys' and the values' parts.
struct PackedWeights {
    arma::uword heads = 1;     // H, query heads
    arma::uword kv_heads = 1;  // G, key/value heads, dividing H
    arma::uword d_k = 0;
    arma::uword d_v = 0;
    arma::mat W_QKV;    // d_model × (H·d_k + G·d_k + G·d_v); with W_KV, the queries' part alone
    // Multi-head latent attention (mla:): the keys' and values' weights over what
    // they read, [C K_R] (n × (r + d_r)): key head g's columns are [W_UK 0; 0 I]
    // (its own part from the latent, the rope key passed on), its value's
    // [W_UV; 0]. W_QKV then holds only the queries' weights, over what they read.
    // Empty otherwise.
    arma::mat W_KV;     // (r + d_r) × (G·d_k + G·d_v)
    arma::rowvec b_Q;   // 1 × H·d_k, empty when no head has a bias
    arma::rowvec b_K;   // 1 × G·d_k
    arma::rowvec b_V;   // 1 × G·d_v
    arma::mat W_O;      // H·d_v × d_out, empty when there is no output projection
    arma::rowvec b_O;   // 1 × d_out, empty when there is none

    arma::uword q_width() const { return heads * d_k; }  // the queries' part
    arma::uword k_width() const { return kv_heads * d_k; }
    arma::uword v_width() const { return kv_heads * d_v; }
    // The key/value head (0-based) that query head h (0-based) reads: ⌊h·G/H⌋,
    // which is Model::kv_head_of counted from 0.
    arma::uword kv_head_of(arma::uword h) const { return h * kv_heads / heads; }
    // Sets W_QKV from the three packed matrices (d_model × H·d_k, × G·d_k, × G·d_v).
    void set_projections(const arma::mat& W_Q, const arma::mat& W_K, const arma::mat& W_V) {
        W_QKV = arma::join_rows(W_Q, W_K, W_V);
    }
};

PackedWeights pack_weights(const Model& model);

// The most query rows the engine works on at once (a block), for any n and m.
inline constexpr arma::uword k_max_block_rows = 256;


// Milliseconds spent in each step, in the order of the steps (summed over heads).
using StepTimes = std::vector<std::pair<StepId, double>>;

// A std::vector<double> that leaves new elements uninitialised (they are all
// written before they are read), so that growing it does not clear memory twice.
template <class T>
struct UninitialisedAllocator : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = UninitialisedAllocator<U>;
    };
    UninitialisedAllocator() = default;
    template <class U>
    UninitialisedAllocator(const UninitialisedAllocator<U>&) noexcept {}
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};
using Buffer = std::vector<double, UninitialisedAllocator<double>>;

// The backward pass's gradients that are not per head, in the packed form of
// PackedWeights: the weights' gradients side by side as W_QKV is.
struct EngineGradients {
    arma::mat concat;     // n × H·d_v: dO·W_Oᵀ, or dO itself without W_O
    arma::mat W_QKV;      // d_model × (H·d_k + G·d_k + G·d_v): [dW_Q dW_K dW_V]
    arma::rowvec b_QKV;   // 1 × the same: the column sums of [dQ dK dV]
    arma::mat W_O;        // H·d_v × d_out; empty without W_O
    arma::rowvec b_O;     // 1 × d_out: the column sums of dO
    arma::mat X;          // n × d_model: dX (through the queries only in cross-attention)
    arma::mat C;          // m × d_model: dC in cross-attention; empty otherwise
    arma::rowvec q_norm;  // with qk_norm: dγ of the queries' norm and of the keys'
    arma::rowvec k_norm;
};

// Memory for the engine's largest matrices, which a caller that computes many
// times (qkv bench) keeps from one call to the next, so that a call does not
// map and clear fresh pages for them. Each call sets the sizes it needs.
struct EngineWorkspace {
    arma::mat projections;  // [Q K V] for self-attention, else the queries alone
    arma::mat keys_values;  // [K V] when keys and values read other rows
    arma::mat concat;
    arma::mat output;       // run_engine moves it into its result; give it back to reuse it
    Buffer packed_keys;     // with qkv's own products (kernels.hpp)
    Buffer packed_values;
    std::vector<Buffer> head_scratch;  // each worker's blocks of the heads
    // the backward pass
    arma::mat grad_projections;  // [dQ dK dV], or dQ alone in cross-attention
    arma::mat grad_keys_values;  // [dK dV] in cross-attention
    arma::mat grad_shared;       // each query head's dK and dV, with grouped-query attention
    arma::mat unnormed;          // with qk_norm and the backward pass: [Q_all K_all] before the norm
    EngineGradients gradients;   // run_engine moves them into its result; give them back to reuse them
};

struct EngineRequest {
    const arma::mat* X = nullptr;      // n × d_model: what the queries read (X, or X + P)
    const arma::mat* C = nullptr;      // m × d_model: what keys and values read (X itself unless cross-attention)
    const PackedWeights* weights = nullptr;
    double scale = 1.0;                // the divisor of the scores
    const Rope* rope = nullptr;        // RoPE of the queries and keys, when set
    const arma::rowvec* alibi = nullptr;  // ALiBi: one slope per query head, when set
    const arma::rowvec* sinks = nullptr;  // one sink logit per query head, when set
    MaskView mask;
    // The example, for the steps the engine computes through their row of the
    // step table (an elementwise step's function reads its numbers).
    const Model* model = nullptr;
    // The steps the example has (steps_of): those of the step table's rows
    // marked `engine` are computed, each only when it is here.
    StepSet steps;
    bool has(StepId id) const { return steps.test(static_cast<std::size_t>(id)); }
    // Steps to hand back whole: per-head ids with their 1-based head (the
    // key/value head for keys, values and rotated_keys), others with 0.
    std::function<bool(StepId id, int head)> keep;
    int threads = 0;                   // 0: as many as BLAS uses
    // Per-head products by qkv's own kernels where the CPU has them
    // (kernels::products_supported()); false: always by BLAS.
    bool own_products = true;
    StepTimes* times = nullptr;        // when set, receives each step's time
    EngineWorkspace* workspace = nullptr;  // when set, memory kept between calls
    // n × d_out, dO = ∂L/∂O: when set, the backward pass follows the forward
    // pass. Each block of query rows recomputes its weights from Q and K (as
    // FlashAttention's backward does), so no head keeps an n × m matrix unless
    // `keep` asks for one; the per-head gradients are kept as `keep` says.
    const arma::mat* grad_output = nullptr;
};

struct EngineResult {
    std::map<StepKey, arma::mat> kept;  // (step, head) → values
    arma::mat output;                                       // n × d_out
    EngineGradients gradients;          // with grad_output
};

EngineResult run_engine(const EngineRequest& request);

// A·W (n × in times in × out), its columns shared among `threads` as the
// engine shares its projections (0: as many as BLAS uses): for the products
// that come before the engine's (`qkv bench --mla`'s latents).
arma::mat project_shared(const arma::mat& A, const arma::mat& W, int threads);

// Estimated peak bytes for computing a model's trace, keeping the n × m
// matrices of `square_steps` steps (scores, scaled, bias, biased, masked,
// weights: 0 to 6) for `kept_heads` query heads; the defaults keep everything.
std::uint64_t estimate_memory(const Model& model, std::uint64_t square_steps = 6,
                              std::uint64_t kept_heads = UINT64_MAX);

// The sizes the estimate reads, for a computation that has no Model (qkv bench).
struct MemoryShape {
    std::uint64_t n = 0;        // query rows
    std::uint64_t m = 0;        // key and value rows
    std::uint64_t d_model = 0;
    std::uint64_t heads = 1;
    std::uint64_t kv_heads = 1;
    std::uint64_t d_k = 0;
    std::uint64_t d_v = 0;
    std::uint64_t d_out = 0;
    bool rope = false;
    std::uint64_t window = 0;   // a sliding window of W keys; 0 = none
    bool backward = false;
    int threads = 0;            // workers, each with its block; 0 = default_threads()
};
MemoryShape memory_shape(const Model& model);
std::uint64_t estimate_memory(const MemoryShape& shape, std::uint64_t square_steps, std::uint64_t kept_heads);

// ── the BLAS the engine calls (blas.cpp) ────────────────────────────────────

// Its name, as `qkv --version` shows it ("none" without BLAS), with
// OPENBLAS_CORETYPE appended when it is set (it pins OpenBLAS's kernels), or
// what choose_blas_kernels() changed.
std::string blas_name();

// The widest vector instructions a CPU runs, as far as the choice of BLAS
// kernels goes.
enum class VectorLevel { sse, avx, avx2, avx512 };
// This CPU's (and its operating system's, which must save the registers);
// sse on CPUs other than x86-64.
VectorLevel cpu_vector_level();
// The OpenBLAS core whose kernels suit a CPU of `level` better than those of
// `core` (a name as openblas_get_corename() gives it), or "" when `core`
// already uses the CPU's widest instructions, or is a name qkv does not know:
// a core short of AVX on a CPU with AVX gives Sandybridge, short of AVX2 on a
// CPU with AVX2 Haswell, short of AVX-512 on a CPU with AVX-512 SkylakeX
// (whose float64 kernels Cooperlake and SapphireRapids share).
std::string better_blas_core(std::string_view core, VectorLevel level);
// Called by main() before any product. OpenBLAS built for every x86-64 CPU
// (Debian's is) takes its kernels from a table of CPU models; a CPU newer than
// the table, or a virtual machine that hides its model, gets the oldest
// (Prescott: SSE3, 3–4 × slower than AVX-512's). When the user has not named
// a core (OPENBLAS_CORETYPE) and better_blas_core() names one, OpenBLAS
// chooses again with that name, as if OPENBLAS_CORETYPE had been set; the
// environment is left as it was. Does nothing with another BLAS or OpenBLAS
// built for one CPU.
void choose_blas_kernels();
// The core OpenBLAS runs ("" without OpenBLAS), and the one its table chose
// when choose_blas_kernels() replaced it ("" when it did not).
std::string blas_core();
std::string blas_table_core();
// Has OpenBLAS choose its kernels again, as with OPENBLAS_CORETYPE=`core`;
// false when OpenBLAS was not built for several CPUs or does not know the name
// (it then keeps its table's choice). Only while no product runs.
bool use_blas_core(const std::string& core);
// From the first call on, BLAS computes each product in the thread that
// calls it: qkv's own threads share every step, and BLAS's idle threads would
// compete with them for the cores. Set once for the whole process and never
// changed back, so that computations may run side by side.
void single_threaded_blas_calls();
// The default number of worker threads: QKV_THREADS when it is a positive
// number, else the CPUs qkv may run on.
int default_threads();

// Called first by main(). OpenBLAS built with its own threads starts one per
// CPU as it is loaded, each mapping a 128 MiB work buffer; qkv never gives
// them work (it calls BLAS single-threaded inside its own threads), and under
// an address-space or data limit they wait for their buffer forever. So
// under such a limit qkv starts itself again (exec) with
// OPENBLAS_NUM_THREADS=1; without one the threads only wait, and a second
// start would cost more than the run. Either way the user's value is kept in
// QKV_THREADS. Without /proc it carries on as it is.
void use_single_threaded_blas(char** argv);

// Bytes the process may still map before it reaches its address-space or
// data limit (ulimit -v, ulimit -d); UINT64_MAX when it has neither.
std::uint64_t memory_room();

// Under such a limit: throws InputError (out of memory) unless BLAS has room
// for its work buffer, and has BLAS map it now, so that no product later waits
// forever for one. Does nothing without a limit.
void reserve_blas_buffer();

// How many of `threads` (at least 1) can run side by side under the memory
// limit, each beyond the first mapping a BLAS buffer and a stack and using
// `per_thread` more bytes; `threads` itself without a limit.
int threads_within_limit(int threads, std::uint64_t per_thread);

}  // namespace qkv
