// Python bindings of the schedule agent in the core (host/schedule_agent.hpp): conversion only.
// dlcp_emu/sim/core_schedule.py attaches one to each training stack and reads its records.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings/bindings.hpp"
#include "host/schedule_agent.hpp"

namespace dlcp_bindings {

namespace {

using namespace dlcp;

template <class T>
std::vector<T> vec(const py::handle& h, const char* name) {
  const auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(h);
  if (!a || a.ndim() != 1) throw py::value_error(std::string("schedule program: ") + name + " must be a 1-D array");
  return {a.data(), a.data() + a.size()};
}

template <class T, class Get>
py::array_t<int64_t> col(const std::vector<T>& rows, Get get) {
  py::array_t<int64_t> out(py::ssize_t(rows.size()));
  int64_t* p = out.mutable_data();
  for (const T& r : rows) *p++ = get(r);
  return out;
}

py::dict messages(const std::vector<MessageRecord>& m) {
  py::dict d;
  d["iteration"] = col(m, [](const MessageRecord& r) { return r.iteration; });
  d["gid"] = col(m, [](const MessageRecord& r) { return r.gid; });
  d["src"] = col(m, [](const MessageRecord& r) { return r.src; });
  d["dst"] = col(m, [](const MessageRecord& r) { return r.dst; });
  d["tclass"] = col(m, [](const MessageRecord& r) { return r.tclass; });
  d["nbytes"] = col(m, [](const MessageRecord& r) { return r.nbytes; });
  d["sent_ns"] = col(m, [](const MessageRecord& r) { return r.sent_ns; });
  d["done_ns"] = col(m, [](const MessageRecord& r) { return r.done_ns; });
  d["lost_bytes"] = col(m, [](const MessageRecord& r) { return r.lost_bytes; });
  return d;
}

HostStack& agent_stack(const Network& net, uint32_t id) {
  HostStack& st = net.stack(id);
  if (!st.agent) throw py::value_error("stack id " + std::to_string(id) + " has no agent in the core");
  return st;
}

}  // namespace

// columns: schedule_arrays.RankArrays.columns(); spec: (bounded_loss, mtu, cc settings, rtt
// settings, reorder_fraction, droppable_fraction, loss_bound).
void attach_schedule_agent(Network& net, uint32_t id, int32_t rank, const py::tuple& c, int64_t compute_ns,
                           int64_t iterations, bool sizes, uint64_t seed, const py::tuple& spec) {
  if (c.size() != 17) throw py::value_error("schedule program: 17 columns (RankArrays.columns())");
  RankProgram p;
  p.rank = rank;
  p.duration_ns = vec<int64_t>(c[0], "duration_ns");
  p.is_compute = vec<uint8_t>(c[1], "is_compute");
  p.tclass = vec<uint8_t>(c[2], "tclass");
  p.priority = vec<uint8_t>(c[3], "priority");
  p.dep_ptr = vec<int64_t>(c[4], "dep_ptr");
  p.dep_idx = vec<int64_t>(c[5], "dep_idx");
  p.send_ptr = vec<int64_t>(c[6], "send_ptr");
  p.send_gid = vec<int64_t>(c[7], "send_gid");
  p.send_dst = vec<int64_t>(c[8], "send_dst");
  p.send_nbytes = vec<int64_t>(c[9], "send_nbytes");
  p.send_after = vec<int64_t>(c[10], "send_after");
  p.send_tid = vec<int64_t>(c[11], "send_tid");
  p.recv_ptr = vec<int64_t>(c[12], "recv_ptr");
  p.recv_gid = vec<int64_t>(c[13], "recv_gid");
  p.key_src = vec<int64_t>(c[14], "key_src");
  p.key_tid = vec<int64_t>(c[15], "key_tid");
  p.key_gid = vec<int64_t>(c[16], "key_gid");
  p.compute_ns = compute_ns;
  SenderSpec s{spec[0].cast<bool>(), spec[1].cast<int64_t>(), make_cc(spec[2].cast<py::dict>()),
               make_rtt(spec[3].cast<py::dict>()), spec[4].cast<double>(), spec[5].cast<double>(),
               spec[6].cast<double>()};
  try {
    net.stack(id).adopt_agent(std::make_unique<ScheduleAgent>(std::move(p), iterations, sizes, seed), std::move(s));
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
}

// (done, iteration, iterations whose communication ended)
py::tuple agent_state(const Network& net, uint32_t id) {
  const ScheduleAgent& a = *agent_stack(net, id).agent;
  int64_t ended = 0;
  for (const IterationRecord& r : a.iteration_records) ended += r.comm_end_ns >= 0;
  return py::make_tuple(a.done, a.iteration, ended);
}

// What ScheduleAgent and its HostStack record, as columns: iterations, busy_ns,
// sent, received, deliveries (their by-class losses as (class, bytes) lists). The message
// and delivery rows are handed over: the core lets go of them once they are columns, so a
// run's end holds them once, not twice (10M rows, 2 GB, at 1024 GPUs).
py::dict take_agent_records(Network& net, uint32_t id) {
  HostStack& st = agent_stack(net, id);
  ScheduleAgent& a = *st.agent;
  py::dict it;
  const auto& ir = a.iteration_records;
  it["iteration"] = col(ir, [](const IterationRecord& r) { return r.iteration; });
  it["start_ns"] = col(ir, [](const IterationRecord& r) { return r.start_ns; });
  it["compute_ns"] = col(ir, [](const IterationRecord& r) { return r.compute_ns; });
  it["backward_end_ns"] = col(ir, [](const IterationRecord& r) { return r.backward_end_ns; });
  it["comm_end_ns"] = col(ir, [](const IterationRecord& r) { return r.comm_end_ns; });
  py::dict del = delivery_columns(st);
  py::dict d;
  d["iterations"] = it;
  d["busy_ns"] = py::array_t<int64_t>(py::ssize_t(a.busy.size()), a.busy.data());
  d["sent"] = messages(a.sent);
  d["received"] = messages(a.received);
  d["deliveries"] = del;
  d["timer_lateness_sum_ns"] = st.timer_lateness_sum;
  std::vector<MessageRecord>().swap(a.sent);
  std::vector<MessageRecord>().swap(a.received);
  std::vector<DeliveryRecord>().swap(st.deliveries);
  return d;
}

}  // namespace dlcp_bindings
