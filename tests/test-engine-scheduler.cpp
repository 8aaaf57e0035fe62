// The engine's scheduler alone, with no model, session or plugin: admission (FIFO, n_parallel, sequences per model,
// worst-case KV room, encoder source rows, cancel) and the packing of one step's token budget (decodes first,
// whole or chunked prefills).
#include <catch2/catch.hpp>

#include <deque>
#include <memory>
#include <stdexcept>
#include <vector>

#include "engine/scheduler.hpp"

using basalt::engine::Request;
using basalt::engine::Scheduler;
using basalt::engine::SchedulerLimits;
using basalt::engine::StepRow;
using Queue = std::deque<std::shared_ptr<Request>>;
using Running = std::vector<std::shared_ptr<Request>>;

namespace {

std::shared_ptr<Request> request(size_t prompt, int32_t max_tokens, uint32_t n_seq = 1, uint32_t n_models = 1) {
    auto r = std::make_shared<Request>();
    r->spec.prompt.assign(prompt, 1);
    r->spec.max_tokens = max_tokens;
    r->info.n_seq = n_seq;
    r->info.n_models = n_models;
    return r;
}

SchedulerLimits limits(uint32_t n_parallel, uint32_t n_seq_max, uint32_t n_kv_slots, uint32_t n_ctx,
                       uint32_t block_size) {
    SchedulerLimits l;
    l.n_parallel = n_parallel;
    l.n_seq_max = n_seq_max;
    l.n_kv_slots = n_kv_slots;
    l.n_ctx = n_ctx;
    l.block_size = block_size;
    return l;
}

void no_op(Request&) {}

// A running request with a plan of feeds (model, tokens) of which `fed` tokens are already computed.
struct Planned {
    std::shared_ptr<Request> r = std::make_shared<Request>();
    std::vector<int32_t> tokens = std::vector<int32_t>(64, 7);
    Planned& feed(size_t n_tokens, size_t fed = 0, int32_t model = 0) {
        basalt_decoder_feed f{};
        f.model = model;
        f.tokens = tokens.data();
        f.n_tokens = n_tokens;
        f.logits = BASALT_DECODER_LOGITS_LAST;
        r->feeds.push_back(f);
        r->fed.push_back(fed);
        r->planned = true;
        return *this;
    }
};

// The rows of one model as (request, feed, first, count) for comparison.
struct Row {
    const Request* r;
    size_t feed, first, count;
    bool operator==(const Row& o) const { return r == o.r && feed == o.feed && first == o.first && count == o.count; }
};

std::vector<Row> rows_of(const std::vector<StepRow>& rows) {
    std::vector<Row> out;
    for (const StepRow& s : rows) out.push_back({s.r, s.feed, s.first, s.count});
    return out;
}

}  // namespace

TEST_CASE("worst-case KV room: prompt + max_tokens per sequence, at most n_ctx, in whole blocks", "[scheduler]") {
    const Scheduler s(limits(4, 4, 1024, 100, 16));
    CHECK(s.worst_case_slots(*request(10, 20)) == 32);                                // 30 -> 2 blocks
    CHECK(s.worst_case_slots(*request(10, 20, 3)) == 96);                             // per sequence
    CHECK(s.worst_case_slots(*request(10, -1)) == 112);                               // unbounded: n_ctx, rounded up
    CHECK(s.worst_case_slots(*request(90, 50)) == 112);                               // capped at n_ctx
    CHECK(Scheduler(limits(1, 1, 64, 64, 0)).worst_case_slots(*request(3, 2)) == 5);  // block size 0 counts as 1
}

TEST_CASE("admission is FIFO: a head that does not fit blocks the requests behind it", "[scheduler]") {
    Scheduler s(limits(4, 4, 128, 128, 16));
    Queue queue{request(10, 54), request(10, 86), request(4, 4)};  // 64, 96 and 16 slots
    const auto a = queue[0], b = queue[1], c = queue[2];
    Running running;
    auto started = s.admit(queue, running, 0, no_op);
    REQUIRE(started == Running{a});
    CHECK(running == Running{a});
    CHECK(queue.size() == 2);  // b does not fit beside a; c would, but waits behind b
    CHECK(s.kv_reserved() == 64);
    CHECK(a->kv_reserved == 64);

    s.release(*a);
    running.clear();
    CHECK(s.kv_reserved() == 0);
    started = s.admit(queue, running, 0, no_op);
    CHECK(started == Running{b, c});  // 96 + 16 <= 128
    CHECK(queue.empty());
    CHECK(s.kv_reserved() == 112);
}

TEST_CASE("n_parallel bounds the requests running at once", "[scheduler]") {
    Scheduler s(limits(2, 8, 1 << 20, 64, 1));
    Queue queue{request(4, 4), request(4, 4), request(4, 4)};
    Running running;
    CHECK(s.admit(queue, running, 0, no_op).size() == 2);
    CHECK(queue.size() == 1);
    CHECK(s.admit(queue, running, 0, no_op).empty());  // still two running
    running.pop_back();
    CHECK(s.admit(queue, running, 0, no_op).size() == 1);
}

TEST_CASE("a request takes n_seq sequences of each model it uses and gives them back", "[scheduler]") {
    SchedulerLimits l = limits(4, 3, 1 << 20, 64, 1);
    l.second_model = true;
    Scheduler s(l);
    CHECK(s.free_seqs(0) == 3);
    CHECK(s.free_seqs(1) == 3);
    Queue queue{request(4, 4, 2, 2), request(4, 4, 2, 1)};
    const auto a = queue[0], b = queue[1];
    Running running;
    CHECK(s.admit(queue, running, 0, no_op) == Running{a});
    CHECK(a->seq_ids[0] == std::vector<int32_t>{0, 1});  // the lowest ids first
    CHECK(a->seq_ids[1] == std::vector<int32_t>{0, 1});
    CHECK(s.free_seqs(0) == 1);
    CHECK(s.free_seqs(1) == 1);
    CHECK(queue.size() == 1);  // b needs 2 sequences of model 0

    s.release(*a);
    CHECK(a->seq_ids[0].empty());
    CHECK(a->kv_reserved == 0);
    CHECK(s.free_seqs(0) == 3);
    CHECK(s.admit(queue, running, 0, no_op) == Running{b});
    CHECK(s.free_seqs(1) == 3);  // b uses the main model only
}

TEST_CASE("without a second model, a request needing one never starts", "[scheduler]") {
    Scheduler s(limits(4, 4, 1 << 20, 64, 1));
    Queue queue{request(4, 4, 1, 2)};
    Running running;
    CHECK(s.admit(queue, running, 0, no_op).empty());
}

TEST_CASE("encoder sources need cross-attention rows until they are encoded", "[scheduler]") {
    Scheduler s(limits(4, 4, 1 << 20, 64, 1));
    Queue queue{request(1, 4), request(1, 4)};
    queue[0]->spec.source.assign(30, 5);
    queue[1]->spec.source.assign(20, 5);
    Running running;
    CHECK(s.admit(queue, running, 40, no_op).size() == 1);  // 30 + 20 > 40 rows
    CHECK(s.source_reserved() == 30);
    s.source_encoded(30);  // the session now holds them: 40 - 30 = 10 rows free
    CHECK(s.admit(queue, running, 10, no_op).empty());
    CHECK(s.admit(queue, running, 20, no_op).size() == 1);
    s.source_encoded(1000);  // never below zero
    CHECK(s.source_reserved() == 0);
}

TEST_CASE("cancelled queued requests leave the queue without starting", "[scheduler]") {
    Scheduler s(limits(4, 4, 1 << 20, 64, 1));
    Queue queue{request(4, 4), request(4, 4), request(4, 4)};
    const auto a = queue[0], b = queue[1], c = queue[2];
    b->cancel = true;
    const Running cancelled = s.take_cancelled(queue);
    CHECK(cancelled == Running{b});
    CHECK(queue == Queue{a, c});
    CHECK(b->seq_ids[0].empty());
}

TEST_CASE("an admission the engine refuses is undone and the request stays queued", "[scheduler]") {
    Scheduler s(limits(4, 2, 1 << 20, 64, 1));
    Queue queue{request(4, 4)};
    queue[0]->spec.source.assign(3, 5);
    Running running;
    CHECK_THROWS_AS(s.admit(queue, running, 10, [](Request&) { throw std::runtime_error("no"); }), std::runtime_error);
    CHECK(queue.size() == 1);
    CHECK(running.empty());
    CHECK(s.free_seqs(0) == 2);
    CHECK(s.kv_reserved() == 0);
    CHECK(s.source_reserved() == 0);
}

TEST_CASE("a step takes decode tokens first, then prefills, in admission order", "[scheduler]") {
    SchedulerLimits l = limits(4, 4, 1 << 20, 64, 1);
    l.max_batch_tokens = 8;
    const Scheduler s(l);
    Planned p1, p2, p3;
    p1.feed(6);                // a prompt
    p2.feed(1);                // decodes
    p3.feed(1).feed(3, 0, 1);  // a decode of model 0 and a prompt of model 1
    std::vector<StepRow> rows[2];
    s.pack({p1.r, p2.r, p3.r}, rows);
    CHECK(rows_of(rows[0]) == std::vector<Row>{{p2.r.get(), 0, 0, 1}, {p3.r.get(), 0, 0, 1}, {p1.r.get(), 0, 0, 6}});
    // 8 - 2 decodes - 6 = 0 left: the second prompt is whole and would not fit, and one prefill was taken.
    CHECK(rows[1].empty());
}

TEST_CASE("whole prompts: never split, but the first prefill of a step goes in whatever its size", "[scheduler]") {
    SchedulerLimits l = limits(4, 4, 1 << 20, 64, 1);
    l.max_batch_tokens = 4;
    const Scheduler s(l);
    Planned big, small;
    big.feed(10);
    small.feed(2);
    std::vector<StepRow> rows[2];
    s.pack({big.r, small.r}, rows);
    CHECK(rows_of(rows[0]) == std::vector<Row>{{big.r.get(), 0, 0, 10}});

    Planned a, b, c;
    a.feed(2);
    b.feed(3);
    c.feed(2);
    std::vector<StepRow> rows2[2];
    s.pack({a.r, b.r, c.r}, rows2);  // b does not fit the 2 tokens left; c does
    CHECK(rows_of(rows2[0]) == std::vector<Row>{{a.r.get(), 0, 0, 2}, {c.r.get(), 0, 0, 2}});
}

TEST_CASE("chunked prefill: pieces of at most prefill_chunk within the budget, continuing where they stopped",
          "[scheduler]") {
    SchedulerLimits l = limits(4, 4, 1 << 20, 64, 1);
    l.max_batch_tokens = 6;
    l.prefill_chunk = 4;
    const Scheduler s(l);
    Planned a, b;
    a.feed(10);
    b.feed(5);
    std::vector<StepRow> rows[2];
    s.pack({a.r, b.r}, rows);
    CHECK(rows_of(rows[0]) == std::vector<Row>{{a.r.get(), 0, 0, 4}, {b.r.get(), 0, 0, 2}});
    a.r->fed[0] = 4;
    b.r->fed[0] = 2;
    std::vector<StepRow> next[2];
    s.pack({a.r, b.r}, next);
    CHECK(rows_of(next[0]) == std::vector<Row>{{a.r.get(), 0, 4, 4}, {b.r.get(), 0, 2, 2}});
}

TEST_CASE("decodes past the budget wait, and finished or unplanned requests take nothing", "[scheduler]") {
    SchedulerLimits l = limits(4, 4, 1 << 20, 64, 1);
    l.max_batch_tokens = 2;
    const Scheduler s(l);
    Planned a, b, c, done, idle, fed;
    a.feed(1);
    done.feed(1);
    done.r->done = BASALT_FINISH_STOP;
    idle.feed(1);
    idle.r->planned = false;
    fed.feed(1, 1);  // already computed this plan
    b.feed(1);
    c.feed(1);
    std::vector<StepRow> rows[2];
    s.pack({a.r, done.r, idle.r, fed.r, b.r, c.r}, rows);
    CHECK(rows_of(rows[0]) == std::vector<Row>{{a.r.get(), 0, 0, 1}, {b.r.get(), 0, 0, 1}});
}
