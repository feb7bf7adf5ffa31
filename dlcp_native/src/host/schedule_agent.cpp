#include "host/schedule_agent.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace dlcp {

namespace {

constexpr uint64_t GOLDEN = 0x9E3779B97F4A7C15ULL;

uint64_t mix(uint64_t z) {  // SplitMix64's finaliser
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

void check_csr(const std::vector<int64_t>& ptr, size_t n_ops, size_t n, const char* what) {
  if (ptr.size() != n_ops + 1 || ptr.front() != 0 || ptr.back() != int64_t(n) ||
      !std::is_sorted(ptr.begin(), ptr.end()))
    throw std::invalid_argument(std::string("schedule program: ") + what +
                                "_ptr must be n_ops + 1 non-decreasing offsets from 0 to its entries");
}

}  // namespace

uint64_t message_key(uint64_t seed, uint64_t iteration, uint64_t gid) { return mix(mix(mix(seed) ^ iteration) ^ gid); }
uint64_t draw(uint64_t key, uint64_t k) { return mix(key + (k + 1) * GOLDEN); }

std::vector<float> message_values(uint64_t key, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k)
    out[k] = static_cast<float>(static_cast<int64_t>(draw(key, k) >> 40) - (int64_t{1} << 23)) * 0x1p-23f;
  return out;
}

std::vector<double> chunk_draws(uint64_t key, int64_t nbytes, int64_t chunk_bytes) {
  std::vector<double> out(static_cast<size_t>((nbytes + chunk_bytes - 1) / chunk_bytes));
  for (size_t k = 0; k < out.size(); ++k) out[k] = static_cast<double>((draw(key, k) >> 11) + 1) * 0x1p-53;
  return out;
}

void RankProgram::check() const {
  const size_t n = n_ops();
  if (is_compute.size() != n || tclass.size() != n || priority.size() != n)
    throw std::invalid_argument("schedule program: is_compute, tclass and priority need one entry per op");
  check_csr(dep_ptr, n, dep_idx.size(), "dep");
  check_csr(send_ptr, n, send_gid.size(), "send");
  check_csr(recv_ptr, n, recv_gid.size(), "recv");
  const size_t s = send_gid.size();
  if (send_dst.size() != s || send_nbytes.size() != s || send_after.size() != s || send_tid.size() != s)
    throw std::invalid_argument("schedule program: send_gid, send_dst, send_nbytes, send_after, send_tid differ in length");
  if (key_tid.size() != key_src.size() || key_gid.size() != key_src.size())
    throw std::invalid_argument("schedule program: key_src, key_tid, key_gid differ in length");
  for (size_t i = 0; i < n; ++i)
    for (int64_t k = dep_ptr[i]; k < dep_ptr[i + 1]; ++k)
      if (dep_idx[k] < 0 || size_t(dep_idx[k]) >= i)
        throw std::invalid_argument("schedule program: op " + std::to_string(i) + " depends on op " +
                                    std::to_string(dep_idx[k]) + ", not an earlier one");
  for (uint8_t pr : priority)
    if (pr > 7) throw std::invalid_argument("schedule program: priority must be in 0..7");
}

ScheduleAgent::ScheduleAgent(RankProgram program, int64_t iterations, bool sizes_, uint64_t seed_)
    : rank(program.rank), sizes(sizes_), seed(seed_), p_(std::move(program)), iterations_(iterations) {
  p_.check();
  const size_t n = p_.n_ops();
  // succ[d]: the ops depending on d, in the order Python appends them (op by op, deps in order)
  succ_ptr_.assign(n + 1, 0);
  for (int64_t d : p_.dep_idx) ++succ_ptr_[d + 1];
  for (size_t i = 0; i < n; ++i) succ_ptr_[i + 1] += succ_ptr_[i];
  succ_.resize(p_.dep_idx.size());
  std::vector<int64_t> fill(succ_ptr_.begin(), succ_ptr_.end() - 1);
  for (size_t i = 0; i < n; ++i)
    for (int64_t k = p_.dep_ptr[i]; k < p_.dep_ptr[i + 1]; ++k) succ_[fill[p_.dep_idx[k]]++] = int64_t(i);
  // op_of_recv: a gid received by two ops is the later op's, as in Python's dict
  std::unordered_map<int64_t, int64_t> d_of_gid;
  recv_d_.resize(p_.recv_gid.size());
  for (size_t i = 0; i < n; ++i)
    for (int64_t k = p_.recv_ptr[i]; k < p_.recv_ptr[i + 1]; ++k) {
      const auto [at, added] = d_of_gid.emplace(p_.recv_gid[k], int64_t(gid_of_.size()));
      if (added) {
        gid_of_.push_back(p_.recv_gid[k]);
        op_of_.push_back(0);
      }
      op_of_[at->second] = int64_t(i);
      recv_d_[k] = at->second;
    }
  auto d_of = [&](int64_t gid) {
    const auto at = d_of_gid.find(gid);
    return at == d_of_gid.end() ? NO_RECV : at->second;
  };
  after_d_.resize(p_.send_after.size());
  for (size_t s = 0; s < p_.send_after.size(); ++s) after_d_[s] = p_.send_after[s] < 0 ? NO_RECV : d_of(p_.send_after[s]);
  // the (src, tid) -> gid entries by key; of a key given twice the later, as a dict keeps it
  std::vector<std::pair<uint64_t, size_t>> keys;
  for (size_t k = 0; k < p_.key_src.size(); ++k)
    keys.emplace_back(uint64_t(p_.key_src[k]) << 32 | uint64_t(p_.key_tid[k]), k);
  std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t j = 0; j < keys.size(); ++j) {
    if (j + 1 < keys.size() && keys[j + 1].first == keys[j].first) continue;
    recv_keys_.push_back(keys[j].first);
    recv_d_of_key_.push_back(d_of(p_.key_gid[keys[j].second]));
  }
  waiting_sends_.resize(gid_of_.size());
  // The records' rows of the whole run, reserved: grown by doubling, 10M rows (1024 GPUs)
  // left up to half of each vector unused and copied every row a few times. Capped: a run
  // bounded by its time limit may never reach its iterations.
  sent.reserve(record_rows(p_.send_gid.size()));
  received.reserve(record_rows(gid_of_.size()));
}

size_t ScheduleAgent::record_rows(size_t per_iteration) const {
  constexpr int64_t MAX_RESERVED = int64_t{1} << 20;
  return size_t(std::min(int64_t(per_iteration) * iterations_, MAX_RESERVED));
}

// -- the sans-I/O surface ---------------------------------------------------------------------
void ScheduleAgent::start(int64_t now) { _start_iteration(0, now); }

std::optional<int64_t> ScheduleAgent::next_timer() const {
  if (timers_.empty()) return std::nullopt;
  return timers_.front().end;
}

void ScheduleAgent::on_timer(int64_t now) {
  std::vector<int64_t> ended;
  while (!timers_.empty() && timers_.front().end <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), later);
    ended.push_back(timers_.back().op);
    timers_.pop_back();
  }
  _end(std::move(ended), now);
}

void ScheduleAgent::on_message(int64_t src, int64_t it, int64_t tid, int64_t lost_bytes, int64_t now) {
  const uint64_t key = uint64_t(src) << 32 | uint64_t(tid);
  const auto g = std::lower_bound(recv_keys_.begin(), recv_keys_.end(), key);
  if (g == recv_keys_.end() || *g != key)
    throw std::invalid_argument("rank " + std::to_string(rank) + ": no message from rank " + std::to_string(src) +
                                " with tensor_id " + std::to_string(tid) + " in its program");
  const int64_t d = recv_d_of_key_[size_t(g - recv_keys_.begin())];
  if (d == NO_RECV)
    throw std::out_of_range("rank " + std::to_string(rank) + ": the message from rank " + std::to_string(src) +
                            " with tensor_id " + std::to_string(tid) + " is in no op's receives");
  received.push_back({it, gid_of_[d], src, rank, p_.tclass[op_of_[d]], 0, -1, now, lost_bytes});
  std::vector<uint8_t>* arrived = nullptr;
  for (auto& [i, a] : arrived_)
    if (i == it) arrived = &a;
  if (arrived == nullptr) arrived = &arrived_.emplace_back(it, std::vector<uint8_t>(gid_of_.size(), 0)).second;
  (*arrived)[d] = 1;
  if (it == iteration) _arrival(d, now);
}

// -- running the program ----------------------------------------------------------------------
bool ScheduleAgent::got(int64_t d) const {
  if (d == NO_RECV) return false;
  for (const auto& [i, a] : arrived_)
    if (i == iteration) return a[d] != 0;
  return false;
}

void ScheduleAgent::_start_iteration(int64_t i, int64_t now) {
  iteration = i;
  iteration_records.push_back({i, now, p_.compute_ns, -1, -1});
  busy.push_back(0);
  busy_until_ = now;
  const size_t n = p_.n_ops();
  pending_deps_.resize(n);
  left_.resize(n);
  for (size_t op = 0; op < n; ++op) {
    pending_deps_[op] = p_.dep_ptr[op + 1] - p_.dep_ptr[op];
    left_[op] = (p_.send_ptr[op + 1] - p_.send_ptr[op]) + (p_.recv_ptr[op + 1] - p_.recv_ptr[op]);
  }
  started_.assign(n, 0);
  n_left_ = int64_t(n);
  for (auto& w : waiting_sends_) w.clear();
  if (n_left_ == 0) {
    _iteration_done(now);
    return;
  }
  std::vector<int64_t> ended;
  for (size_t op = 0; op < n; ++op)
    if (pending_deps_[op] == 0 && _ready(int64_t(op), now)) ended.push_back(int64_t(op));
  // messages of this iteration that came early count when their op starts (_ready)
  _end(std::move(ended), now);
}

bool ScheduleAgent::_ready(int64_t op, int64_t now) {
  started_[op] = 1;
  if (p_.is_compute[op]) {
    const int64_t end = now + p_.duration_ns[op];
    timers_.push_back({end, ++seq_, op});
    std::push_heap(timers_.begin(), timers_.end(), later);
    busy.back() += std::max<int64_t>(0, end - std::max(now, busy_until_));  // the union of compute time
    busy_until_ = std::max(busy_until_, end);
    return false;
  }
  for (int64_t s = p_.send_ptr[op]; s < p_.send_ptr[op + 1]; ++s) {
    if (p_.send_after[s] < 0 || got(after_d_[s]))
      _send(op, s, now);
    else if (after_d_[s] != NO_RECV)  // else it waits for a gid that never comes: never sent
      waiting_sends_[after_d_[s]].emplace_back(op, s);
  }
  for (int64_t k = p_.recv_ptr[op]; k < p_.recv_ptr[op + 1]; ++k)
    if (got(recv_d_[k])) left_[op] -= 1;
  return left_[op] == 0;
}

void ScheduleAgent::_arrival(int64_t d, int64_t now) {
  const int64_t op = op_of_[d];
  if (!started_[op]) return;  // counted when the op starts
  std::vector<int64_t> ended;
  if (!waiting_sends_[d].empty()) {
    const std::vector<std::pair<int64_t, int64_t>> waiters = std::exchange(waiting_sends_[d], {});
    for (const auto& [waiter, s] : waiters) {
      _send(waiter, s, now);
      if (left_[waiter] == 0 && waiter != op) ended.push_back(waiter);
    }
  }
  left_[op] -= 1;
  if (left_[op] == 0) ended.push_back(op);
  _end(std::move(ended), now);
}

void ScheduleAgent::_send(int64_t op, int64_t s, int64_t now) {
  const int64_t tclass = p_.tclass[op];
  const int64_t nbytes = p_.send_nbytes[s];
  sent.push_back({iteration, p_.send_gid[s], rank, p_.send_dst[s], tclass, nbytes, now, -1, 0});
  const int64_t wire = (nbytes + 3) / 4 * 4;  // whole float32 values
  outbox_.push_back({p_.send_dst[s], iteration, p_.send_tid[s], p_.priority[op], wire, p_.send_gid[s],
                     tclass != GRADIENT_CLASS, uint8_t(tclass)});
  left_[op] -= 1;
}

// ops ended; start what waited only for them (a worklist: chains of ops that end at once
// would otherwise recurse as deep as the schedule is long)
void ScheduleAgent::_end(std::vector<int64_t> work, int64_t now) {
  if (work.empty()) return;
  while (!work.empty()) {
    const int64_t i = work.back();
    work.pop_back();
    n_left_ -= 1;
    for (int64_t k = succ_ptr_[i]; k < succ_ptr_[i + 1]; ++k) {
      const int64_t j = succ_[k];
      pending_deps_[j] -= 1;
      if (pending_deps_[j] == 0 && _ready(j, now)) work.push_back(j);
    }
  }
  if (n_left_ == 0) _iteration_done(now);
}

void ScheduleAgent::_iteration_done(int64_t now) {
  IterationRecord& rec = iteration_records.back();
  rec.backward_end_ns = rec.comm_end_ns = now;
  for (size_t k = 0; k < arrived_.size(); ++k)
    if (arrived_[k].first == iteration) {
      arrived_.erase(arrived_.begin() + ptrdiff_t(k));
      break;
    }
  if (iteration + 1 < iterations_)
    _start_iteration(iteration + 1, now);
  else
    done = true;
}

}  // namespace dlcp
