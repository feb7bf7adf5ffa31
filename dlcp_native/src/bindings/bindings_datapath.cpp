// Python bindings of the compiled forwarding loop (dlcp_native._core.Datapath) and of the
// frame parser and rewrites (for the differential tests against frames.py and rewrite.py).
// dlcp_emu/emu/datapath/native_loop.py drives it.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/bindings.hpp"
#include "datapath/datapath.hpp"
#include "datapath/forwarder.hpp"
#include "datapath/frames.hpp"
#include "host/traffic.hpp"

namespace py = pybind11;
using namespace dlcp;

namespace dlcp_bindings {

namespace {

py::array_t<int64_t> take(std::vector<int64_t>& v) {
  py::array_t<int64_t> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  v.clear();
  return out;
}

// sockets.py `RxRing.state`: where we read and how many slots hold frames (None: no ring).
py::object ring_state(const RxRing* r) {
  if (!r) return py::none();
  py::dict s;
  s["next"] = r->next();
  s["slots"] = r->slots();
  s["waiting"] = r->waiting();
  s["truncated"] = r->truncated;
  s["resyncs"] = r->resyncs;
  s["vlan_tagged"] = r->vlan_tagged;
  return s;
}

std::vector<uint8_t> bytes_of(const py::bytes& b) {
  const std::string s = b;
  return {s.begin(), s.end()};
}

// Histogram::take as (counts by bin, n, total, max, above): `Lateness.merge`'s arguments.
py::tuple taken(Histogram& h) {
  Histogram::Taken t = h.take();
  return py::make_tuple(take(t.counts), t.n, t.total, t.max, t.above);
}

}  // namespace

void bind_datapath(py::module_& m) {
  // The loop's histogram alone, for the differential test against Lateness.
  py::class_<Histogram>(m, "Histogram")
      .def(py::init<std::vector<double>>())
      .def_readwrite("threshold", &Histogram::threshold)
      .def("add", [](Histogram& h, const std::vector<int64_t>& values) {
        for (int64_t v : values) h.add(v);
      })
      .def("take", [](Histogram& h) { return taken(h); });

  py::class_<Datapath>(m, "Datapath")
      .def(py::init([](py::object core, const std::vector<py::tuple>& ports,
                       std::unordered_map<uint64_t, int32_t> routes, std::vector<int32_t> port_route,
                       std::vector<std::vector<int>> flood, size_t batch, int wake_fd, int64_t sample_ns,
                       int64_t pending_limit, const std::vector<double>& edges,
                       std::pair<int64_t, int64_t> thresholds) {
             std::vector<DatapathPort> specs;
             for (const py::tuple& t : ports)
               specs.push_back({t[0].cast<int>(), t[1].cast<uint32_t>(), t[2].cast<size_t>(), t[3].cast<bool>(),
                                t[4].cast<bool>(), t[5].cast<double>(), t[6].cast<int64_t>()});
             return std::make_unique<Datapath>(core_switch(core), specs, std::move(routes), std::move(port_route),
                                               std::move(flood), batch, wake_fd, sample_ns, pending_limit, edges,
                                               thresholds);
           }),
           py::keep_alive<1, 2>())
      .def("run",
           [](Datapath& d, int64_t until, int64_t clock_offset) {
             py::gil_scoped_release released;
             return static_cast<int>(d.run(until, clock_offset));
           })
      .def("drain",
           [](Datapath& d, int64_t deadline) {
             py::gil_scoped_release released;
             d.drain(deadline);
           })
      .def("take_lateness", [](Datapath& d) { return taken(d.lateness); })
      .def("take_rx_wait", [](Datapath& d) { return taken(d.rx_wait); })
      .def("take_samples", [](Datapath& d) { return take(d.samples); })
      .def_readwrite("send_ahead", &Datapath::send_ahead)
      .def_readwrite("wake_period_ns", &Datapath::wake_period_ns)
      .def_readonly("loops", &Datapath::loops)
      .def("counters",
           [](const Datapath& d) {
             py::list ports;
             for (size_t i = 0; i < d.counters.size(); ++i) {
               const DatapathPortCounters& c = d.counters[i];
               py::dict p;
               p["rx_frames"] = c.rx_frames;
               p["tx_errors"] = d.tx_errors()[i];
               p["rx_errors"] = c.rx_errors;
               p["flood_frames"] = c.flood_frames;
               p["flood_copies"] = c.flood_copies;
               p["not_flooded"] = c.not_flooded;
               const RxRing* r = d.ring(i);
               p["truncated"] = r ? r->truncated : 0;
               const NicLink* nic = d.nic(i);
               p["host_link_drops"] = nic ? nic->drops : 0;
               ports.append(p);
             }
             py::dict out;
             out["ports"] = ports;
             out["malformed"] = d.malformed;
             out["invalid_dlcp"] = d.invalid_dlcp;
             out["rewrite_errors"] = d.rewrite_errors;
             out["on_link"] = d.on_link();
             return out;
           })
      .def("ring_state", [](const Datapath& d, size_t port) { return ring_state(d.ring(port)); });

  py::class_<Forwarder>(m, "Forwarder")
      .def(py::init<const std::vector<int>&, const std::vector<uint32_t>&, std::unordered_map<uint64_t, int>,
                    std::vector<std::vector<int>>, size_t, int, size_t>())
      .def("run",
           [](Forwarder& f, int64_t until) {
             py::gil_scoped_release released;
             return f.run(until);
           })
      .def("ring_state", [](const Forwarder& f, size_t port) { return ring_state(f.ring(port)); })
      .def("counters", [](const Forwarder& f) {
        py::dict d;
        d["rx_frames"] = f.counters.rx_frames;
        d["tx_frames"] = f.tx_frames();
        d["tx_errors"] = f.tx_errors();
        d["no_route"] = f.counters.no_route;
        return d;
      });

  // trafficgen.py `send` compiled: (sent, errors, elapsed ns, [frames per class]).
  m.def("send_frames", [](int fd, const std::vector<py::bytes>& frames, const std::vector<py::bytes>& samples,
                          const std::vector<int>& cls_of, int classes, double rate_pps, int64_t duration_ns,
                          int64_t limit, int64_t burst, bool stamp, int64_t sample_every) {
    std::vector<std::vector<uint8_t>> f, s;
    for (const py::bytes& b : frames) f.push_back(bytes_of(b));
    for (const py::bytes& b : samples) s.push_back(bytes_of(b));
    SendPlan plan{rate_pps, duration_ns, limit, burst, stamp, sample_every};
    SendResult r;
    {
      py::gil_scoped_release released;
      r = send_frames(fd, f, s, cls_of, classes, plan);
    }
    return py::make_tuple(r.sent, r.errors, r.elapsed_ns, r.per_class);
  });

  // frames.py `parse`: None for a refused frame's reason, else the Packet's fields.
  m.def("parse_frame", [](const py::bytes& frame) -> py::object {
    const std::vector<uint8_t> f = bytes_of(frame);
    Packet p;
    switch (parse_frame(f.data(), f.size(), p)) {
      case Parsed::MALFORMED: return py::str("malformed");
      case Parsed::INVALID_DLCP: return py::str("invalid_dlcp");
      case Parsed::PACKET: break;
    }
    return py::make_tuple(p.size, p.flow, p.prio, p.mag, p.layer, p.droppable, p.dlcp, p.ect, p.ce,
                          p.header_size, p.tclass);
  });
  // rewrite.py `trim_frame` (None where Python raises) and `mark_ce` on a copy.
  m.def("trim_frame", [](const py::bytes& frame) -> py::object {
    std::vector<uint8_t> f = bytes_of(frame);
    if (!trim_frame(f)) return py::none();
    return py::bytes(reinterpret_cast<const char*>(f.data()), f.size());
  });
  m.def("mark_ce", [](const py::bytes& frame) {
    std::vector<uint8_t> f = bytes_of(frame);
    const bool ce = mark_ce(f);
    return py::make_tuple(ce, py::bytes(reinterpret_cast<const char*>(f.data()), f.size()));
  });
}

}  // namespace dlcp_bindings
