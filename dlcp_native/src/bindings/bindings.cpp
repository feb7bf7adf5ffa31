// Python bindings of the native switch (module dlcp_native._core). Only conversion lives
// here: the model is in the other files, plain C++. dlcp_native/switch.py wraps this in the
// surface of switch_models.Switch (port numbers, route keys, Packet objects).
#include <algorithm>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "switch/classifiers.hpp"
#include "wire/wire_layout.hpp"
#include "switch/load_balancers.hpp"
#include "switch/queue_managers.hpp"
#include "switch/schedulers.hpp"
#include "bindings/bindings.hpp"
#include "datapath/machine_probe.hpp"
#include "switch/switch.hpp"

namespace py = pybind11;
using namespace dlcp;

namespace dlcp_bindings {

Params to_params(const py::dict& d) {
  Params p;
  for (auto item : d) {
    const std::string key = py::str(item.first);
    py::handle v = item.second;
    if (v.is_none()) {
      p.set(key, std::monostate{});
    } else if (py::isinstance<py::bool_>(v) || py::isinstance<py::int_>(v)) {
      p.set(key, v.cast<int64_t>());
    } else if (py::isinstance<py::float_>(v)) {
      p.set(key, v.cast<double>());
    } else if (py::isinstance<py::str>(v)) {
      p.set(key, v.cast<std::string>());
    } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
      std::vector<double> values;
      for (py::handle x : v) values.push_back(x.cast<double>());
      p.set(key, values);
    } else {
      throw SpecError("parameter '" + key + "' has a value the native core cannot take: " +
                      std::string(py::str(py::repr(v))));
    }
  }
  return p;
}

StageSpec to_stage(const py::tuple& t) { return {t[0].cast<std::string>(), to_params(t[1])}; }

std::vector<PortConfig> port_configs(const std::vector<py::tuple>& ports) {
  std::vector<PortConfig> out;
  for (const py::tuple& t : ports)
    out.push_back({t[0].cast<double>(), t[1].cast<int64_t>(), t[2].cast<int64_t>(),
                   t[3].cast<int64_t>(), t[4].cast<int64_t>()});
  return out;
}

PipelineSpec pipeline(const py::dict& stages) {
  return {to_stage(stages["load_balancer"]), to_stage(stages["classifier"]),
          to_stage(stages["queue_manager"]), to_stage(stages["scheduler"])};
}

py::dict counters(const Switch& sw) {
  py::list ports;
  for (const auto& p : sw.ports) {
    const PortCounters& c = p->counters;
    py::dict d;
    d["enqueued"] = c.enqueued;
    d["enqueued_bytes"] = c.enqueued_bytes;
    d["tx_packets"] = c.tx_packets;
    d["tx_bytes"] = c.tx_bytes;
    d["trimmed"] = c.trimmed;
    d["marked"] = c.marked;
    d["drops"] = std::vector<int64_t>(c.drops.begin(), c.drops.end());
    d["drop_bytes"] = c.drop_bytes;
    d["q_enqueued"] = c.q_enqueued;
    d["q_sent"] = c.q_sent;
    d["q_dropped"] = c.q_dropped;
    d["q_max_bytes"] = c.q_max_bytes;
    d["max_bytes"] = c.max_bytes;
    std::vector<std::pair<uint16_t, std::array<int64_t, 4>>> jobs = c.jobs;
    std::sort(jobs.begin(), jobs.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    py::dict per_job;
    for (const auto& [id, row] : jobs) per_job[py::int_(id)] = std::vector<int64_t>(row.begin(), row.end());
    d["jobs"] = per_job;
    d["queued_packets"] = p->packets;
    d["queued_bytes"] = p->bytes;
    d["inflight_packets"] = p->inflight.size();
    ports.append(d);
  }
  py::dict out;
  out["rx_packets"] = sw.rx_packets;
  out["rx_bytes"] = sw.rx_bytes;
  out["no_route"] = sw.no_route;
  out["ports"] = ports;
  return out;
}

std::vector<int64_t> queued_bytes(const Switch& sw) {
  std::vector<int64_t> out;
  for (const auto& p : sw.ports) out.push_back(p->bytes);
  return out;
}

}  // namespace dlcp_bindings

namespace {

using namespace dlcp_bindings;

using I64 = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;
using Bool = py::array_t<bool, py::array::c_style | py::array::forcecast>;

class Core {
 public:
  // port_numbers: what run_batch writes for each port index (the caller's port numbers).
  Core(const std::vector<py::tuple>& ports, const std::vector<std::vector<int>>& routes,
       const std::vector<int>& default_route, const py::dict& stages, bool record_drops,
       const std::vector<int64_t>& port_numbers)
      : sw_(port_configs(ports), routes, default_route, pipeline(stages), record_drops),
        port_numbers_(port_numbers) {
    if (port_numbers_.size() != ports.size()) throw py::value_error("one port number per port");
  }

  py::tuple receive(int dst, int in_port, int64_t now, int64_t uid, int64_t size, int64_t flow,
                    int prio, int mag, int64_t layer, bool droppable, bool dlcp, bool ect,
                    bool ce, int64_t header_size, int rewrite, int tclass, int64_t job) {
    if (job < 0 || job > NO_JOB)
      throw py::value_error("packet uid " + std::to_string(uid) + ": job must be in 0..65535");
    if (prio < 0 || prio > 7 || mag < 0 || mag > 7)
      throw py::value_error("packet uid " + std::to_string(uid) + ": prio and mag must be in 0..7, got " +
                            std::to_string(prio) + " and " + std::to_string(mag));
    if (tclass < 0 || tclass > wire::TOP_TRAFFIC_CLASS)
      throw py::value_error("packet uid " + std::to_string(uid) + ": tclass must be in 0.." +
                            std::to_string(int(wire::TOP_TRAFFIC_CLASS)) + ", got " + std::to_string(tclass));
    if (const std::string bad = packet_fields_out_of_range(size, header_size, layer); !bad.empty())
      throw py::value_error("packet uid " + std::to_string(uid) + ": " + bad);
    Packet pkt;
    pkt.uid = uid;
    pkt.size = static_cast<int32_t>(size);
    pkt.dst = dst;
    pkt.flow = flow;
    pkt.prio = static_cast<uint8_t>(prio);
    pkt.mag = static_cast<uint8_t>(mag);
    pkt.tclass = static_cast<uint8_t>(tclass);
    pkt.layer = static_cast<int32_t>(layer);
    pkt.droppable = droppable;
    pkt.dlcp = dlcp;
    pkt.ect = ect;
    pkt.ce = ce;
    pkt.header_size = static_cast<int32_t>(header_size);
    pkt.rewrite = static_cast<uint8_t>(rewrite);
    pkt.job = static_cast<uint16_t>(job);
    Slot slot;
    const int port = sw_.receive(pkt, in_port, now, &slot);
    const Packet& left = slot == NO_SLOT ? pkt : sw_.held(slot);
    return py::make_tuple(port, slot == NO_SLOT ? -1 : static_cast<int64_t>(slot), left.cls,
                          left.size, left.rewrite, left.ce, sw_.drop_log.records.size());
  }

  // The drops recorded since the last call: (now, port index, reason code, slot or -1).
  py::list take_drops() {
    py::list out;
    for (const DropRecord& d : sw_.drop_log.records)
      out.append(py::make_tuple(d.now, d.port, static_cast<int>(d.reason),
                                d.slot == NO_SLOT ? -1 : static_cast<int64_t>(d.slot)));
    sw_.drop_log.records.clear();
    return out;
  }

  // (port index, slot, depart) for every packet that leaves by `now`.
  py::list poll(int64_t now) {
    scratch_.clear();
    sw_.poll(now, scratch_);
    py::list out;
    for (const Departure& d : scratch_) out.append(py::make_tuple(d.port, d.slot, d.pkt.depart));
    return out;
  }

  std::optional<int64_t> next_event_time() const { return sw_.next_event_time(); }
  int64_t backlog() const { return sw_.backlog(); }
  std::vector<int64_t> queued_bytes() const { return dlcp_bindings::queued_bytes(sw_); }
  std::pair<int64_t, int64_t> conservation() const { return sw_.conservation(); }

  py::dict counters() const { return dlcp_bindings::counters(sw_); }

  // The slow path alone: every packet goes through the queue manager and the scheduler.
  Switch& model() { return sw_; }

  void disable_idle_fast_path() {
    for (auto& p : sw_.ports) p->idle_limit = 0;
  }

  py::tuple run_batch(const I64& uid, const I64& size, const I64& dst, const I64& flow,
                      const I64& prio, const I64& mag, const I64& layer, const I64& header_size,
                      const I64& rewrite, const I64& in_port, const I64& time,
                      const Bool& droppable, const Bool& dlcp, const Bool& ect, const Bool& ce,
                      const I64& tclass, const I64& job) {
    Arrivals a;
    a.n = static_cast<size_t>(uid.size());
    const std::vector<const py::array*> columns = {&size, &dst, &flow, &prio, &mag, &layer,
                                                   &header_size, &rewrite, &in_port, &time,
                                                   &droppable, &dlcp, &ect, &ce, &tclass, &job};
    for (const py::array* col : columns)
      if (static_cast<size_t>(col->size()) != a.n) throw py::value_error("columns differ in length");
    a.uid = uid.data();
    a.size = size.data();
    a.dst = dst.data();
    a.flow = flow.data();
    a.prio = prio.data();
    a.mag = mag.data();
    a.tclass = tclass.data();
    a.layer = layer.data();
    a.header_size = header_size.data();
    a.rewrite = rewrite.data();
    a.in_port = in_port.data();
    a.time = time.data();
    a.droppable = droppable.data();
    a.dlcp = dlcp.data();
    a.ect = ect.data();
    a.ce = ce.data();
    a.job = job.data();
    for (size_t i = 0; i < a.n; ++i) {
      if (a.job[i] < 0 || a.job[i] > NO_JOB) throw py::value_error("job must be in 0..65535");
      if (const std::string bad = packet_fields_out_of_range(a.size[i], a.header_size[i], a.layer[i]); !bad.empty())
        throw py::value_error("packet uid " + std::to_string(a.uid[i]) + ": " + bad);
    }
    // Columns for the worst case, written in place: pages never written are never touched.
    const py::ssize_t n = static_cast<py::ssize_t>(a.n);
    py::array_t<int64_t> d_uid(n), d_port(n), d_depart(n), d_cls(n), d_rewrite(n), d_size(n);
    py::array_t<int64_t> x_uid(n), x_port(n), x_reason(n), x_time(n);
    DepartureColumns departures{d_uid.mutable_data(), d_port.mutable_data(), d_depart.mutable_data(),
                                d_cls.mutable_data(), d_rewrite.mutable_data(), d_size.mutable_data()};
    DropColumns drops{x_uid.mutable_data(), x_port.mutable_data(), x_reason.mutable_data(),
                      x_time.mutable_data()};
    {
      py::gil_scoped_release released;
      run_arrivals(sw_, a, port_numbers_, departures, drops);
    }
    const py::slice d(0, static_cast<py::ssize_t>(departures.rows), 1);
    const py::slice x(0, static_cast<py::ssize_t>(drops.rows), 1);
    return py::make_tuple(
        py::make_tuple(d_uid[d], d_port[d], d_depart[d], d_cls[d], d_rewrite[d], d_size[d]),
        py::make_tuple(x_uid[x], x_port[x], x_reason[x], x_time[x]));
  }

 private:
  Switch sw_;
  std::vector<int64_t> port_numbers_;
  std::vector<Departure> scratch_;
};

}  // namespace

dlcp::Switch& dlcp_bindings::core_switch(py::handle core) { return core.cast<Core&>().model(); }

PYBIND11_MODULE(_core, m) {
  m.doc() = "The switch pipeline compiled: see dlcp_native.NativeSwitch.";
  py::register_exception<SpecError>(m, "SpecError", PyExc_ValueError);
  py::list reasons;
  for (const char* name : REASON_NAMES) reasons.append(name);
  m.attr("REASONS") = py::tuple(reasons);
  m.def("stage_names", [] {
    py::dict d;
    d["load_balancer"] = load_balancer_names();
    d["classifier"] = classifier_names();
    d["queue_manager"] = queue_manager_names();
    d["scheduler"] = scheduler_names();
    return d;
  });
  py::class_<Core>(m, "Switch")
      .def(py::init<const std::vector<py::tuple>&, const std::vector<std::vector<int>>&,
                    const std::vector<int>&, const py::dict&, bool, const std::vector<int64_t>&>())
      .def("receive", &Core::receive)
      .def("take_drops", &Core::take_drops)
      .def("poll", &Core::poll)
      .def("next_event_time", &Core::next_event_time)
      .def("backlog", &Core::backlog)
      .def("queued_bytes", &Core::queued_bytes)
      .def("conservation", &Core::conservation)
      .def("counters", &Core::counters)
      .def("disable_idle_fast_path", &Core::disable_idle_fast_path)
      .def("run_batch", &Core::run_batch);
  // The machine's costs (dlcp_emu/experiment/dilation.py); the threads run without the GIL.
  m.def("probe_wake_lag", &probe::wake_lag, py::arg("samples"), py::arg("gap_ns"),
        py::call_guard<py::gil_scoped_release>());
  m.def("probe_round_trips", [](int count) {
    probe::RoundTrips r;
    {
      py::gil_scoped_release free;
      r = probe::round_trips(count);
    }
    return py::make_tuple(r.count, r.cpu_ns, r.wall_ns);
  }, py::arg("count"));
  dlcp_bindings::bind_datapath(m);
  dlcp_bindings::bind_network(m);
  dlcp_bindings::bind_transport(m);
  dlcp_bindings::bind_host(m);
}
