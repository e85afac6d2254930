// The threads that share the engine's steps (engine_parts::run_on_workers):
// started once and kept, so that each step costs a wake-up, not the start of
// a thread. The engine runs four to six steps a computation, each on every
// worker; at 16 threads, starting them afresh cost about as long as the
// steps themselves at BERT size.
#include "attention/engine_parts.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>


namespace qkv::engine_parts {

namespace {

// How long an idle thread keeps looking for the next step before it sleeps
// (about 0.1 ms): the steps of one computation follow each other within
// this. Only while the pool's threads have a CPU each: with more threads than
// CPUs, a thread that spins takes the CPU from one that works.
constexpr int k_spins = 4000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Threads 1, 2, … of the pool; the caller is worker 0.
class WorkerPool {
public:
    // Runs task(w) for w = 0 … workers − 1, w = 0 on this thread; returns how
    // many ran (fewer when no more threads could be started), once all have
    // returned. `task` must not throw.
    int run(int workers, const std::function<void(int)>& task) {
        grow(workers - 1);
        const int helpers = std::min(workers - 1, static_cast<int>(threads_.size()));
        const bool spin = static_cast<int>(threads_.size()) < cpus_;
        spin_.store(spin, std::memory_order_relaxed);
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            task_ = &task;
            active_ = helpers;
            remaining_.store(helpers, std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        task(0);
        while (remaining_.load(std::memory_order_acquire) > 0) {
            if (spin) {
                cpu_relax();
            } else {
                std::this_thread::yield();
            }
        }
        return helpers + 1;
    }

private:
    // Starts threads until there are `count`, or no more can be started.
    void grow(int count) {
        while (static_cast<int>(threads_.size()) < count) {
            const int index = static_cast<int>(threads_.size()) + 1;
            try {
                threads_.emplace_back([this, index] { serve(index); });
            } catch (const std::system_error&) {
                return;  // no memory or no thread left: those there are share the work
            }
        }
    }

    void serve(int index) {
        std::uint64_t seen = 0;
        for (;;) {
            std::uint64_t now = generation_.load(std::memory_order_acquire);
            const int spins = spin_.load(std::memory_order_relaxed) ? k_spins : 0;
            for (int spin = 0; now == seen && spin < spins; ++spin) {
                cpu_relax();
                now = generation_.load(std::memory_order_acquire);
            }
            const std::function<void(int)>* task = nullptr;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
                seen = generation_.load(std::memory_order_relaxed);
                if (index > active_) {
                    continue;  // not needed for this step
                }
                task = task_;
            }
            (*task)(index);
            remaining_.fetch_sub(1, std::memory_order_acq_rel);
        }
    }

    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<int> remaining_{0};
    std::atomic<bool> spin_{false};
    const int cpus_ = usable_cpus();
    const std::function<void(int)>* task_ = nullptr;  // under mutex_
    int active_ = 0;                                  // under mutex_
};

// Set while a thread runs a task of the pool, or holds it.
thread_local bool t_in_pool = false;

}  // namespace

int run_on_workers(int workers, const std::function<void(int)>& task) {
    // The pool lives as long as the process; its threads are never joined
    // (they wait for work when the process ends).
    static auto* const pool = new WorkerPool;
    static std::mutex busy;
    if (workers > 1 && !t_in_pool) {
        std::unique_lock<std::mutex> lock(busy, std::try_to_lock);
        if (lock.owns_lock()) {
            t_in_pool = true;
            const std::function<void(int)> marked = [&task](int worker) {
                t_in_pool = true;
                task(worker);
            };
            const int ran = pool->run(workers, marked);
            t_in_pool = false;
            return ran;
        }
    }
    // another computation holds the pool, or a task of it asks for more
    // workers: threads of its own, as many as can be started
    std::vector<std::thread> own;
    for (int w = 1; w < workers; ++w) {
        try {
            own.emplace_back(task, w);
        } catch (const std::system_error&) {
            break;
        }
    }
    task(0);
    for (auto& thread : own) {
        thread.join();
    }
    return static_cast<int>(own.size()) + 1;
}

}  // namespace qkv::engine_parts
