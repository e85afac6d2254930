// The engine's threads: the pool that runs its steps (worker_pool.cpp) and the
// blocks of queries the heads are cut into, so that every worker has some.
#include "support.hpp"

#include "attention/engine.hpp"
#include "attention/engine_parts.hpp"

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace qkv;

namespace {

// parallel_for(workers, count): every item once, and no worker index past the
// workers asked for
void check_each_item_once(int workers, arma::uword count) {
    std::vector<std::atomic<int>> runs(count);
    std::atomic<int> highest{-1};
    engine_parts::parallel_for(workers, count, [&](arma::uword item, int worker) {
        ++runs[item];
        int seen = highest.load();
        while (worker > seen && !highest.compare_exchange_weak(seen, worker)) {
        }
    });
    int wrong = 0;
    for (const auto& run : runs) {
        wrong += run.load() == 1 ? 0 : 1;
    }
    CHECK(wrong == 0);
    CHECK(highest.load() < workers);
}

}  // namespace

TEST_CASE("the pool runs every item once, on as many workers as asked, call after call", "[compute]") {
    for (int round = 0; round < 20; ++round) {
        for (const int workers : {1, 2, 3, 8, 17}) {
            for (const arma::uword count : {0, 1, 5, 100, 1000}) {
                INFO(workers << " workers, " << count << " items, round " << round);
                check_each_item_once(workers, count);
            }
        }
    }
    // all the workers of a call take part when there is enough to do
    std::atomic<int> mask{0};
    engine_parts::parallel_for(4, 4, [&mask](arma::uword, int worker) {
        mask |= 1 << worker;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
    CHECK(mask.load() == 0b1111);
}

TEST_CASE("a call inside a worker, or beside another call, gets threads of its own", "[compute]") {
    // nested: the pool is busy with the outer call
    std::atomic<int> inner{0};
    engine_parts::parallel_for(3, 6, [&inner](arma::uword, int) {
        engine_parts::parallel_for(2, 10, [&inner](arma::uword, int) { ++inner; });
    });
    CHECK(inner.load() == 60);
    // two threads at once: one holds the pool, the other starts its own
    std::atomic<int> total{0};
    const auto many = [&total] {
        for (int call = 0; call < 50; ++call) {
            engine_parts::parallel_for(3, 40, [&total](arma::uword, int) { ++total; });
        }
    };
    std::thread other(many);
    many();
    other.join();
    CHECK(total.load() == 2 * 50 * 40);
    // and an exception in one call leaves the pool working for the next
    CHECK_THROWS_AS(engine_parts::parallel_for(4, 100,
                                               [](arma::uword item, int) {
                                                   if (item == 10) {
                                                       throw std::runtime_error("item 10");
                                                   }
                                               }),
                    std::runtime_error);
    check_each_item_once(4, 100);
}

TEST_CASE("the heads' blocks of queries are cut smaller so that every worker has three, down to 48 rows",
          "[compute]") {
    REQUIRE(std::getenv("QKV_BLOCK_ROWS") == nullptr);
    // BERT size: 252 rows (two and a bit blocks a head) at most; 16 workers and
    // 12 heads want 4 blocks a head
    CHECK(engine_parts::block_rows(512, 512) == 252);
    CHECK(engine_parts::block_rows(512, 512, 16, 12) == 132);
    // a whole number of tiles of 6 in as even blocks as the tiles allow
    CHECK(engine_parts::block_rows(512, 512, 2, 12) == 174);
    CHECK(engine_parts::block_rows(512, 512, 1, 12) == 174);
    // enough blocks already
    CHECK(engine_parts::block_rows(2048, 2048, 16, 12) == 60);
    // no block under 48 rows, and none longer than the queries
    CHECK(engine_parts::block_rows(100, 100, 16, 1) == 54);
    CHECK(engine_parts::block_rows(40, 40, 16, 1) == 40);
    CHECK(engine_parts::block_rows(5, 5, 16, 4) == 5);
    for (const arma::uword n : {1, 7, 48, 97, 300, 511, 512, 1000, 4096}) {
        for (const int workers : {1, 2, 16, 64}) {
            for (const arma::uword heads : {1, 4, 12, 32}) {
                INFO(n << " queries, " << workers << " workers, " << heads << " heads");
                const arma::uword rows = engine_parts::block_rows(n, n, workers, heads);
                CHECK(rows >= 1);
                CHECK(rows <= engine_parts::block_rows(n, n));
                CHECK((rows % 6 == 0 || rows == n));
                CHECK(rows >= std::min<arma::uword>(n, engine_parts::k_min_balanced_rows));
            }
        }
    }
    // QKV_BLOCK_ROWS, for measuring, decides alone
    setenv("QKV_BLOCK_ROWS", "30", 1);
    CHECK(engine_parts::block_rows(512, 512, 16, 12) == 30);
    unsetenv("QKV_BLOCK_ROWS");
}
