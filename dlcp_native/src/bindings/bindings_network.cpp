// Python bindings of the native network (dlcp_native._core.Network). Only conversion lives
// here: the network is in network.cpp, plain C++. dlcp_native/network.py builds it from a
// topology and gives it the surface a driver needs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings/bindings.hpp"
#include "net/network.hpp"
#include "transport/transport_receiver.hpp"
#include "transport/transport_sender.hpp"
#include "wire/wire_layout.hpp"

namespace dlcp_bindings {

namespace {

using namespace dlcp;
using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using Bool = py::array_t<bool, py::array::c_style | py::array::forcecast>;

Peer to_peer(const py::tuple& t) {
  return {t[0].cast<int32_t>(), t[1].cast<int32_t>(), t[2].cast<int32_t>()};
}

std::vector<SwitchSetup> switch_setups(const py::list& switches) {
  std::vector<SwitchSetup> out;
  for (py::handle h : switches) {
    const py::tuple t = h.cast<py::tuple>();
    SwitchSetup s;
    s.ports = port_configs(t[0].cast<std::vector<py::tuple>>());
    s.routes = t[1].cast<std::vector<std::vector<int>>>();
    s.pipeline = pipeline(t[2].cast<py::dict>());
    for (py::handle p : t[3].cast<py::list>()) s.peers.push_back(to_peer(p.cast<py::tuple>()));
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<HostSetup> host_setups(const py::list& hosts) {
  std::vector<HostSetup> out;
  for (py::handle h : hosts) {
    const py::tuple t = h.cast<py::tuple>();
    out.push_back({t[0].cast<double>(), t[1].cast<int64_t>(), to_peer(t[2].cast<py::tuple>()),
                   t.size() > 3 && t[3].cast<bool>()});
  }
  return out;
}

Packet packet(int64_t uid, int64_t size, int64_t dst, int64_t flow, int64_t prio, int64_t mag,
              int64_t layer, int64_t header_size, int64_t rewrite, bool droppable, bool dlcp,
              bool ect, bool ce, int64_t tclass, int64_t job) {
  if (job < 0 || job > NO_JOB)
    throw py::value_error("packet uid " + std::to_string(uid) + ": job must be in 0..65535");
  if (prio < 0 || prio > 7 || mag < 0 || mag > 7)
    throw py::value_error("packet uid " + std::to_string(uid) + ": prio and mag must be in 0..7, got " +
                          std::to_string(prio) + " and " + std::to_string(mag));
  if (tclass < 0 || tclass > wire::TOP_TRAFFIC_CLASS)
    throw py::value_error("packet uid " + std::to_string(uid) + ": tclass must be in 0.." +
                          std::to_string(int(wire::TOP_TRAFFIC_CLASS)) + ", got " + std::to_string(tclass));
  if (rewrite < 0 || rewrite > 255)
    throw py::value_error("packet uid " + std::to_string(uid) + ": rewrite must be in 0..255");
  if (const std::string bad = packet_fields_out_of_range(size, header_size, layer); !bad.empty())
    throw py::value_error("packet uid " + std::to_string(uid) + ": " + bad);
  Packet pkt;
  pkt.uid = uid;
  pkt.size = static_cast<int32_t>(size);
  pkt.dst = dst >= 0 && dst < (int64_t{1} << 31) ? static_cast<int32_t>(dst) : -1;
  pkt.flow = flow;
  pkt.prio = static_cast<uint8_t>(prio);
  pkt.mag = static_cast<uint8_t>(mag);
  pkt.tclass = static_cast<uint8_t>(tclass);
  pkt.layer = static_cast<int32_t>(layer);
  pkt.header_size = static_cast<int32_t>(header_size);
  pkt.rewrite = static_cast<uint8_t>(rewrite);
  pkt.droppable = droppable;
  pkt.dlcp = dlcp;
  pkt.ect = ect;
  pkt.ce = ce;
  pkt.job = static_cast<uint16_t>(job);
  return pkt;
}

template <class T>
py::array_t<T> column(const std::vector<T>& v) {
  py::array_t<T> a(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

class NetCore {
 public:
  NetCore(const py::list& switches, const py::list& hosts, bool record_drops)
      : net_(switch_setups(switches), host_setups(hosts), record_drops) {}

  bool send(int host, int64_t now, int64_t major, int64_t uid, int64_t size, int64_t dst,
            int64_t flow, int64_t prio, int64_t mag, int64_t layer, int64_t header_size,
            int64_t rewrite, bool droppable, bool dlcp, bool ect, bool ce, int64_t tclass, int64_t job) {
  if (job < 0 || job > NO_JOB)
    throw py::value_error("packet uid " + std::to_string(uid) + ": job must be in 0..65535");
    return net_.send(host, packet(uid, size, dst, flow, prio, mag, layer, header_size, rewrite,
                                  droppable, dlcp, ect, ce, tclass, job), now, major);
  }

  // Sends as events at their times, in the order given (what loop.at(t, send) does).
  void send_at(const I64& host, const I64& time, const I64& uid, const I64& size, const I64& dst,
               const I64& flow, const I64& prio, const I64& mag, const I64& layer,
               const I64& header_size, const I64& rewrite, const Bool& droppable, const Bool& dlcp,
               const Bool& ect, const Bool& ce, const I64& tclass, const I64& job, int64_t major) {
    const py::ssize_t n = host.size();
    for (const py::array* col : std::vector<const py::array*>{&time, &uid, &size, &dst, &flow, &prio, &mag,
                                                              &layer, &header_size, &rewrite, &droppable,
                                                              &dlcp, &ect, &ce, &tclass})
      if (col->size() != n) throw py::value_error("columns differ in length");
    for (py::ssize_t i = 0; i < n; ++i)
      net_.send_at(static_cast<int>(host.at(i)),
                   packet(uid.at(i), size.at(i), dst.at(i), flow.at(i), prio.at(i), mag.at(i), layer.at(i),
                          header_size.at(i), rewrite.at(i), droppable.at(i), dlcp.at(i), ect.at(i), ce.at(i),
                          tclass.at(i), job.at(i)),
                   time.at(i), major);
  }

  // (events run, batch): each entry (kind, callback, major, uid, host, time, size, rewrite,
  // cls, ce, arrival).
  py::tuple run(int64_t until, int64_t max_events) {
    batch_.clear();
    uint64_t n;
    {
      py::gil_scoped_release released;
      n = net_.run(until, max_events, batch_);
    }
    py::list out;
    for (const HostEvent& e : batch_) {
      const Delivery& d = e.delivery;
      out.append(py::make_tuple(static_cast<int>(e.kind), e.callback, e.major, d.uid, d.host, d.time,
                                d.size, d.rewrite, d.cls, d.ce, d.arrival));
    }
    return py::make_tuple(n, out);
  }

  // Deliveries to hosts no driver handles, since the last call: uid, host, time, rewrite,
  // size, cls.
  py::tuple take_deliveries() {
    std::vector<int64_t> uid, host, time, rewrite, size, cls;
    for (const Delivery& d : net_.deliveries) {
      uid.push_back(d.uid);
      host.push_back(d.host);
      time.push_back(d.time);
      rewrite.push_back(d.rewrite);
      size.push_back(d.size);
      cls.push_back(d.cls);
    }
    net_.deliveries.clear();
    return py::make_tuple(column(uid), column(host), column(time), column(rewrite), column(size), column(cls));
  }

  // Drops since the last call: node, time, port index, reason code, uid.
  py::tuple take_drops() {
    std::vector<int64_t> node, time, port, reason, uid;
    for (const NetDrop& d : net_.drops) {
      node.push_back(d.node);
      time.push_back(d.time);
      port.push_back(d.port);
      reason.push_back(d.reason);
      uid.push_back(d.uid);
    }
    net_.drops.clear();
    return py::make_tuple(column(node), column(time), column(port), column(reason), column(uid));
  }

  py::list conservation() const {
    py::list out;
    for (const auto& sw : net_.switches) out.append(sw->conservation());
    for (const HostNic& nic : net_.nics) out.append(nic.conservation());
    return out;
  }

  py::dict nic(int host) const {
    const HostNic& n = net_.nics.at(host);
    py::dict d;
    d["rx_packets"] = n.rx_packets;
    d["tx_packets"] = n.tx_packets;
    d["tx_bytes"] = n.tx_bytes;
    d["drops"] = n.drops;
    d["drop_bytes"] = n.drop_bytes;
    return d;
  }

  // Live bytes queued at each port of switch `s` (the buffer occupancy).
  std::vector<int64_t> queued_bytes(int s) const { return dlcp_bindings::queued_bytes(*net_.switches.at(s)); }

  py::array_t<int64_t> in_flight() const {
    std::vector<int64_t> uids;
    net_.in_flight(uids);
    return column(uids);
  }

  // A job's endpoints at a host run in the core from now on (Network::attach_stack):
  // `receiver` a core receiver (dlcp_native._core.*Receiver), kept alive here as long as the
  // network; wire: (dlcp, ect, udp_port or -1, this host's address, host index by rank,
  // address by rank). Returns the stack's id.
  uint32_t attach_stack(int host, int job, const py::object& receiver, const py::tuple& wire, bool agent_reads) {
    auto* r = receiver.cast<transport::Receiver*>();
    if (job < 0 || job > 0xFFFF) throw py::value_error("job must be in 0..65535, got " + std::to_string(job));
    StackWire w{wire[0].cast<bool>(), wire[1].cast<bool>(), wire[2].cast<int64_t>(), wire[3].cast<int64_t>(),
                wire[4].cast<std::vector<int32_t>>(), wire[5].cast<std::vector<int64_t>>()};
    const uint32_t id = net_.attach_stack(
        std::make_unique<HostStack>(host, static_cast<uint16_t>(job), r, std::move(w), agent_reads));
    held_.append(receiver);
    return id;
  }

  void add_sender(uint32_t id, const py::object& sender) {
    net_.stack(id).add_sender(sender.cast<transport::Sender*>());
    held_.append(sender);
  }

  // After the agent ran: its next timer (None: none), then the flush (Network::stack_flush).
  void stack_flush(uint32_t id, int64_t now, int64_t major, std::optional<int64_t> agent_timer) {
    net_.stack(id).agent_timer = agent_timer;
    net_.stack_flush(id, now, major);
  }

  // The senders' completed tensors since the last call, as take_completed gives them.
  py::list take_completions(uint32_t id) { return stack_completions(net_.stack(id)); }

  // Packet records (host/packet_log.py) from now on: at most max_records sent and received.
  void record_packets(uint32_t id, int64_t max_records) {
    net_.stack(id).records = std::make_unique<PacketRecords>(max_records);
    net_.record_carried_drops = true;
  }

  // PacketLog.records() of the stack: {"sent": [rows], "received": [rows], "overflow": n}.
  py::dict packet_records(uint32_t id) { return stack_packet_records(net_.stack(id)); }

  // The stacks' packets dropped: (node, port index, reason code, job, packet key) each.
  py::list carried_drops() const {
    py::list out;
    for (const CarriedDrop& d : net_.carried_drops)
      out.append(py::make_tuple(d.at.node, d.at.port, static_cast<int>(d.at.reason), d.h.job, key(d.h)));
    return out;
  }

  // The packet keys of the stacks' packets still in the network.
  py::list carried_in_flight() const {
    std::vector<transport::Header> hs;
    net_.carried_in_flight(hs);
    py::list out;
    for (const transport::Header& h : hs) out.append(key(h));
    return out;
  }

  Network net_;

 private:
  // packet_log.py `packet_key`
  static py::tuple key(const transport::Header& h) {
    return py::make_tuple(h.src_rank, h.dst_rank, h.type, h.iteration, h.tensor_id, h.chunk_index, h.send_ts_ns);
  }

  std::vector<HostEvent> batch_;
  py::list held_;  // the endpoints the stacks point to
};

}  // namespace

py::list stack_completions(HostStack& st) {
  py::list out;
  for (const transport::SendResult& r : std::exchange(st.completions, {}))
    out.append(py::make_tuple(r.iteration, r.tensor_id, r.nbytes, r.chunks, r.start_ns, r.done_ns, r.packets,
                              r.retransmissions, r.probe_rounds));
  return out;
}

namespace {
// One int64 column of the rows (ce: bool), as pandas types the Python log's tuples, so either
// engine's records make the same frame (packet_log.py COLUMNS).
template <typename T, typename Get>
py::array_t<T> column(const std::vector<PacketRow>& rows, Get get) {
  py::array_t<T> out(py::ssize_t(rows.size()));
  T* p = out.mutable_data();
  for (const PacketRow& r : rows) *p++ = T(get(r));
  return out;
}

py::dict columns(const std::vector<PacketRow>& rows, bool received) {
  py::dict d;
  d["src"] = column<int64_t>(rows, [](const PacketRow& r) { return r.src; });
  d["dst"] = column<int64_t>(rows, [](const PacketRow& r) { return r.dst; });
  d["type"] = column<int64_t>(rows, [](const PacketRow& r) { return r.type; });
  d["iteration"] = column<int64_t>(rows, [](const PacketRow& r) { return r.iteration; });
  d["tensor_id"] = column<int64_t>(rows, [](const PacketRow& r) { return r.tensor_id; });
  d["chunk"] = column<int64_t>(rows, [](const PacketRow& r) { return r.chunk; });
  d["send_ts_ns"] = column<int64_t>(rows, [](const PacketRow& r) { return r.send_ts_ns; });
  d["flags"] = column<int64_t>(rows, [](const PacketRow& r) { return r.flags; });
  d["priority"] = column<int64_t>(rows, [](const PacketRow& r) { return r.priority; });
  d["mag_class"] = column<int64_t>(rows, [](const PacketRow& r) { return r.mag_class; });
  d["tclass"] = column<int64_t>(rows, [](const PacketRow& r) { return r.tclass; });
  d["size"] = column<int64_t>(rows, [](const PacketRow& r) { return r.size; });
  if (received) {
    d["recv_ns"] = column<int64_t>(rows, [](const PacketRow& r) { return r.recv_ns; });
    d["ce"] = column<bool>(rows, [](const PacketRow& r) { return r.ce; });
  }
  return d;
}
}  // namespace

// packet_log.py `PacketLog.records`: columns, not rows (a row a packet cost a second of
// Python per 350k packets to build and again to frame).
py::dict stack_packet_records(const HostStack& st) {
  const PacketRecords* r = st.records.get();
  if (r == nullptr) throw py::value_error("this stack takes no packet records");
  py::dict d;
  d["sent"] = columns(r->sent, false);
  d["received"] = columns(r->received, true);
  d["overflow"] = r->overflow;
  return d;
}

void bind_network(py::module_& m) {
  m.def(
      "python_tuple_hash",
      [](const std::vector<int64_t>& items) { return python_tuple_hash(items.data(), items.size()); },
      "hash(tuple(items)) as CPython computes it (non-negative ints)");
  py::class_<NetCore>(m, "Network")
      .def(py::init<const py::list&, const py::list&, bool>())
      .def("send", &NetCore::send)
      .def("send_at", &NetCore::send_at)
      .def("call_at", [](NetCore& c, int64_t t, int64_t major) { return c.net_.call_at(t, major); })
      .def("set_handled", [](NetCore& c, int host, bool on) { c.net_.set_handled(host, on); })
      .def("run", &NetCore::run)
      .def("take_deliveries", &NetCore::take_deliveries)
      .def("take_drops", &NetCore::take_drops)
      .def("next_event_time", [](const NetCore& c) { return c.net_.next_event_time(); })
      .def_property_readonly("now", [](const NetCore& c) { return c.net_.loop.now; })
      .def_property_readonly("events", [](const NetCore& c) { return c.net_.loop.events; })
      .def_property_readonly("major", [](const NetCore& c) { return c.net_.loop.major(); })
      .def_property_readonly("delivered", [](const NetCore& c) { return c.net_.delivered; })
      .def("pending", [](const NetCore& c) { return c.net_.loop.pending(); })
      .def("counters", [](const NetCore& c, int s) { return counters(*c.net_.switches.at(s)); })
      .def("conservation", &NetCore::conservation)
      .def("nic", &NetCore::nic)
      .def("queued_bytes", &NetCore::queued_bytes)
      .def("in_flight", &NetCore::in_flight)
      .def("attach_stack", &NetCore::attach_stack, py::arg("host"), py::arg("job"), py::arg("receiver"),
           py::arg("wire"), py::arg("agent_reads"))
      .def("add_sender", &NetCore::add_sender)
      .def("attach_schedule_agent", [](NetCore& c, uint32_t id, int32_t rank, const py::tuple& columns, int64_t compute_ns,
                                       int64_t iterations, bool sizes, uint64_t seed, const py::tuple& spec) {
        attach_schedule_agent(c.net_, id, rank, columns, compute_ns, iterations, sizes, seed, spec);
      })
      .def("start_agent", [](NetCore& c, uint32_t id, int64_t now, int64_t major) { return c.net_.start_agent(id, now, major); })
      .def("agent_state", [](const NetCore& c, uint32_t id) { return agent_state(c.net_, id); })
      .def("take_agent_records", [](NetCore& c, uint32_t id) { return take_agent_records(c.net_, id); })
      .def("attach_collectives", [](NetCore& c, uint32_t id, int32_t rank, const py::tuple& policy) {
        attach_collectives(c.net_, id, rank, policy);
      })
      .def("begin_collective", [](NetCore& c, uint32_t id, int64_t iteration, int64_t priority, int64_t tclass,
                                  const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& steps,
                                  const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& mag_ptr,
                                  const py::array_t<double, py::array::c_style | py::array::forcecast>& mags,
                                  int64_t now) { return begin_collective(c.net_, id, iteration, priority, tclass, steps, mag_ptr, mags, now); })
      .def("take_ended_collective", [](NetCore& c, uint32_t id) { return take_ended_collective(c.net_, id); })
      .def("collectives_deliveries", [](const NetCore& c, uint32_t id) { return collectives_deliveries(c.net_, id); })
      .def("stack_flush", &NetCore::stack_flush)
      .def("take_completions", &NetCore::take_completions)
      .def("record_packets", &NetCore::record_packets)
      .def("packet_records", &NetCore::packet_records)
      .def("carried_drops", &NetCore::carried_drops)
      .def("carried_in_flight", &NetCore::carried_in_flight);
}

}  // namespace dlcp_bindings
