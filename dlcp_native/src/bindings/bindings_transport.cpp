// Python bindings of the native transport endpoints (dlcp_native._core.ReliableSender,
// DlcpSender, ReliableReceiver, DlcpReceiver, run_transport_pair). Only conversion lives here: the endpoints are in
// transport_*.cpp, plain C++. dlcp_emu/transport/native.py wraps these in the surface of the
// Python endpoints (DlcpHeader in and out, Delivery, SendResult).
//
// A packet crosses as a tuple: the 14 header fields in DlcpHeader's order, then the payload
// (a memoryview of the message's bytes for DATA, None when payload-free; bytes otherwise).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bindings/bindings.hpp"
#include "wire/header_codec.hpp"
#include "transport/transport_message.hpp"
#include "transport/transport_pair.hpp"
#include "transport/transport_receiver.hpp"
#include "transport/transport_sender.hpp"

namespace dlcp_bindings {

namespace {

using namespace dlcp::transport;

// What keeps a message's bytes alive: the caller's array, as a memoryview of bytes (the
// slices handed out as DATA payloads are views of it).
struct Held {
  py::object bytes;
};

std::shared_ptr<const Buffer> make_buffer(const py::object& data, int64_t nbytes) {
  auto buf = std::make_shared<Buffer>();
  if (data.is_none()) {  // payload-free: sizes only
    if (nbytes <= 0) throw py::value_error("nbytes must be positive for a payload-free message");
    buf->size = size_t(nbytes);
    return buf;
  }
  // memoryview(...).cast("B") refuses a non-contiguous buffer: the adapter passes a
  // C-contiguous float32 array, so this is no copy.
  py::object bytes = py::module_::import("builtins").attr("memoryview")(data).attr("cast")("B");
  const py::buffer_info info = py::buffer(bytes).request();
  buf->data = static_cast<const uint8_t*>(info.ptr);
  buf->size = size_t(info.size);
  buf->owner = std::shared_ptr<void>(new Held{std::move(bytes)}, [](void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<Held*>(p);
  });
  return buf;
}

Header to_header(const py::tuple& t) {
  if (t.size() != 15) throw py::value_error("a header is 15 fields, got " + std::to_string(t.size()));
  return {t[0].cast<uint8_t>(),   t[1].cast<uint8_t>(),   t[2].cast<uint8_t>(),   t[3].cast<uint8_t>(),
          t[4].cast<uint16_t>(),  t[5].cast<uint16_t>(),  t[6].cast<uint16_t>(),  t[7].cast<uint16_t>(),
          t[8].cast<uint32_t>(),  t[9].cast<uint32_t>(),  t[10].cast<uint32_t>(), t[11].cast<uint32_t>(),
          t[12].cast<uint32_t>(), t[13].cast<int64_t>(),  t[14].cast<uint8_t>()};
}

// The payload given to an endpoint, held for the call. None: payload-free.
struct PayloadView {
  explicit PayloadView(const py::object& obj) {
    if (obj.is_none()) {
      p.absent = true;
      return;
    }
    if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_SIMPLE) != 0) throw py::error_already_set();
    held = true;
    p.data = static_cast<const uint8_t*>(view.buf);
    p.size = size_t(view.len);
  }
  ~PayloadView() {
    if (held) PyBuffer_Release(&view);
  }
  PayloadView(const PayloadView&) = delete;
  PayloadView& operator=(const PayloadView&) = delete;
  Py_buffer view{};
  bool held = false;
  InPayload p;
};

py::object payload_of(const OutPacket& pkt) {
  if (pkt.h.type != DATA) return py::bytes(reinterpret_cast<const char*>(pkt.control.data()), pkt.control.size());
  if (!pkt.buf || !pkt.buf->data) return py::none();
  const auto* held = static_cast<const Held*>(pkt.buf->owner.get());
  return held->bytes[py::slice(pkt.off, size_t(pkt.off) + pkt.h.payload_len, 1)];
}

py::list packets(const std::vector<OutPacket>& out) {
  py::list list(out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const Header& h = out[i].h;
    list[i] = py::make_tuple(h.type, h.flags, h.priority, h.mag_class, h.job, h.src_rank, h.dst_rank,
                             h.payload_len, h.iteration, h.tensor_id, h.chunk_index, h.chunk_count, h.offset,
                             h.send_ts_ns, h.tclass, payload_of(out[i]));
  }
  return list;
}

std::vector<uint8_t> bytes_of(const py::bytes& b) {
  const std::string s = b;
  return {s.begin(), s.end()};
}

py::dict by_class(const std::vector<std::pair<int, int64_t>>& by) {
  py::dict d;
  for (const auto& [cls, v] : by) d[py::int_(cls)] = v;
  return d;
}

py::object delivered_data(Delivery& d) {
  if (d.data.empty()) return py::none();  // payload-free
  // The receiver's buffer becomes the array's memory: no copy.
  uint8_t* bytes = d.data.release();
  py::capsule owner(bytes, [](void* p) { std::free(p); });
  return py::array_t<float>({d.total / 4}, {4}, reinterpret_cast<const float*>(bytes), owner);
}

py::tuple delivery(Delivery& d) {
  py::list ranges;
  for (const auto& [a, b] : d.lost_ranges) ranges.append(py::make_tuple(a, b));
  py::array_t<int64_t> lost(py::ssize_t(d.lost_chunks.size()));
  std::copy(d.lost_chunks.begin(), d.lost_chunks.end(), lost.mutable_data());
  return py::make_tuple(d.job, d.src_rank, d.dst_rank, d.iteration, d.tensor_id, delivered_data(d), d.first_ns,
                        d.done_ns, lost, d.lost_bytes, ranges, by_class(d.lost_bytes_by_class),
                        by_class(d.lost_chunks_by_class), d.bound_bytes, d.packets, d.duplicates, d.trimmed,
                        d.total);
}

CongestionControl::Ecn ecn_mode(const std::string& ecn) {
  if (ecn == "dctcp") return CongestionControl::Ecn::DCTCP;
  if (ecn == "halve") return CongestionControl::Ecn::HALVE;
  if (ecn == "dctcp-every-window") return CongestionControl::Ecn::DCTCP_EVERY_WINDOW;
  throw py::value_error("ecn must be one of 'dctcp', 'halve', 'dctcp-every-window', got '" + ecn + "'");
}

}  // namespace

CongestionControl make_cc(const py::dict& c) {
  CongestionControl cc(c["cwnd"].cast<double>(), c["min_window"].cast<double>(), c["max_window"].cast<double>(),
                       ecn_mode(c["ecn"].cast<std::string>()),
                       c["g"].cast<double>(), c["pacing"].cast<bool>(), c["pacing_gain"].cast<double>());
  cc.ssthresh = c["ssthresh"].cast<double>();
  cc.alpha = c["alpha"].cast<double>();
  cc.pulls = c["pulls"].cast<bool>();
  return cc;
}

RttEstimator make_rtt(const py::dict& r) {
  return RttEstimator(r["rto_ns"].cast<int64_t>(), r["min_rto_ns"].cast<int64_t>(), r["max_rto_ns"].cast<int64_t>(),
                      r["granularity_ns"].cast<int64_t>(), r["pto_margin_ns"].cast<int64_t>());
}

namespace {

py::object optional_int(const std::optional<int64_t>& t) { return t ? py::object(py::int_(*t)) : py::none(); }

template <class S, class R>
void bind_endpoints(py::module_& m, const char* sender, const char* receiver) {
  py::class_<S, Sender>(m, sender)
      .def(py::init([](int64_t src, int64_t dst, int64_t job, int64_t mtu, const py::dict& cc, const py::dict& rtt,
                       double reorder_fraction) {
             return new S(src, dst, job, mtu, make_cc(cc), make_rtt(rtt), reorder_fraction);
           }),
           py::arg("src_rank"), py::arg("dst_rank"), py::arg("job"), py::arg("mtu"), py::arg("cc"), py::arg("rtt"),
           py::arg("reorder_fraction"));
  py::class_<R, Receiver>(m, receiver)
      .def(py::init<int64_t, int64_t, int64_t, bool, int64_t>(), py::arg("rank"), py::arg("mtu"),
           py::arg("remember"), py::arg("store"), py::arg("pull_gap_ns") = 0);
}

}  // namespace

void bind_transport(py::module_& m) {
  m.def(
      "chunk_magnitudes",
      [](const py::array_t<float, py::array::c_style>& data, int64_t chunk_size) {
        if (data.ndim() != 1) throw py::value_error("data must be one-dimensional float32");
        const std::vector<double> mags = chunk_magnitudes(data.data(), data.size(), chunk_size);
        py::array_t<double> out(py::ssize_t(mags.size()));
        std::copy(mags.begin(), mags.end(), out.mutable_data());
        return out;
      },
      py::arg("data"), py::arg("chunk_size"),
      "message.chunk_magnitudes in the core, to the bit: mean |g| of each chunk_size-byte chunk");
  m.def(
      "plan_chunks",
      [](const py::array_t<double, py::array::c_style | py::array::forcecast>& mags, int64_t total,
         int64_t chunk_size, double droppable_fraction, double loss_bound, bool droppable_allowed,
         const std::optional<std::vector<double>>& edges) {
        if (mags.ndim() != 1) throw py::value_error("magnitudes must be one-dimensional");
        const std::vector<double> m(mags.data(), mags.data() + mags.size());
        const ChunkPlan p = plan_chunks(m, total, chunk_size, droppable_fraction, loss_bound, droppable_allowed, edges);
        return py::make_tuple(py::bytes(reinterpret_cast<const char*>(p.mag_class.data()), p.mag_class.size()),
                              py::bytes(reinterpret_cast<const char*>(p.droppable.data()), p.droppable.size()),
                              p.bound_bytes);
      },
      "MagnitudePolicy.plan (drop_order magnitude) in the core: (mag_class, droppable, bound_bytes)");
  // Congestion control and RTT estimator: what a sender's `cc` and `rtt` show, and objects of
  // their own for the tests that hold them to the Python ones operation by operation.
  py::class_<CongestionControl>(m, "TransportCongestion")
      .def(py::init([](double initial_window, double min_window, double max_window, const std::string& ecn,
                       double dctcp_g, bool pacing, double pacing_gain, bool pulls) {
             CongestionControl c(initial_window, min_window, max_window, ecn_mode(ecn), dctcp_g, pacing, pacing_gain);
             c.pulls = pulls;
             return c;
           }),
           py::arg("initial_window") = INITIAL_WINDOW, py::arg("min_window") = 1.0,
           py::arg("max_window") = double(1 << 20), py::arg("ecn") = "dctcp", py::arg("dctcp_g") = DCTCP_G,
           py::arg("pacing") = false, py::arg("pacing_gain") = 2.0, py::arg("pulls") = false)
      .def("on_send", &CongestionControl::on_send)
      .def("on_ack", &CongestionControl::on_ack, py::arg("seq"), py::arg("ce"), py::arg("newly_acked"))
      .def("on_loss", &CongestionControl::on_loss)
      .def("on_timeout", &CongestionControl::on_timeout)
      .def("pacing_gap_ns",
           [](const CongestionControl& c, const py::object& srtt) {
             return c.pacing_gap_ns(srtt.is_none() ? 0.0 : srtt.cast<double>());
           })
      .def_readwrite("cwnd", &CongestionControl::cwnd)
      .def_readwrite("ssthresh", &CongestionControl::ssthresh)
      .def_readwrite("alpha", &CongestionControl::alpha)
      .def_readonly("min_window", &CongestionControl::min_window)
      .def_readonly("max_window", &CongestionControl::max_window)
      .def_property_readonly("ecn", [](const CongestionControl& c) {
        return c.ecn == CongestionControl::Ecn::HALVE ? "halve"
               : c.ecn == CongestionControl::Ecn::DCTCP ? "dctcp" : "dctcp-every-window";
      })
      .def_readonly("g", &CongestionControl::g)
      .def_readonly("pacing", &CongestionControl::pacing)
      .def_readonly("pacing_gain", &CongestionControl::pacing_gain)
      .def_readonly("pulls", &CongestionControl::pulls)
      .def_readonly("next_seq", &CongestionControl::next_seq)
      .def_readonly("reductions", &CongestionControl::reductions)
      .def_readonly("timeouts", &CongestionControl::timeouts)
      .def_property_readonly("recover", &CongestionControl::recover)
      .def_property_readonly("alpha_end", &CongestionControl::alpha_end);
  py::class_<RttEstimator>(m, "TransportRtt")
      .def(py::init<int64_t, int64_t, int64_t, int64_t, int64_t>(), py::arg("initial_rto_ns") = INITIAL_RTO_NS,
           py::arg("min_rto_ns") = MIN_RTO_NS, py::arg("max_rto_ns") = MAX_RTO_NS,
           py::arg("granularity_ns") = GRANULARITY_NS, py::arg("pto_margin_ns") = 0)
      .def("sample", &RttEstimator::sample)
      .def("backoff", &RttEstimator::backoff)
      .def_property_readonly("srtt_ns", [](const RttEstimator& r) { return r.has_srtt ? py::object(py::float_(r.srtt_ns)) : py::none(); })
      .def_property_readonly("rttvar_ns", [](const RttEstimator& r) { return r.has_srtt ? py::object(py::float_(r.rttvar_ns)) : py::none(); })
      .def_property_readonly("min_rtt_ns", [](const RttEstimator& r) { return r.has_min_rtt ? py::object(py::int_(r.min_rtt_ns)) : py::none(); })
      .def_readonly("rto_ns", &RttEstimator::rto_ns)
      .def_readonly("min_rto_ns", &RttEstimator::min_rto_ns)
      .def_readonly("max_rto_ns", &RttEstimator::max_rto_ns)
      .def_readonly("granularity_ns", &RttEstimator::granularity_ns)
      .def_readonly("pto_margin_ns", &RttEstimator::pto_margin_ns);

  py::class_<Sender>(m, "TransportSender")
      .def("send",
           [](Sender& s, uint32_t iteration, uint32_t tensor_id, int64_t priority, const py::object& data,
              int64_t nbytes, const py::bytes& mag, const py::bytes& drop, int64_t bound, int64_t now,
              uint8_t tclass) {
             ChunkPlan plan{bytes_of(mag), bytes_of(drop), bound};
             s.send(iteration, tensor_id, priority, make_buffer(data, nbytes), plan, now, tclass);
           },
           py::arg("iteration"), py::arg("tensor_id"), py::arg("priority"), py::arg("data"), py::arg("nbytes"),
           py::arg("mag"), py::arg("drop"), py::arg("bound"), py::arg("now"),
           py::arg("tclass") = uint8_t(dlcp::wire::TCLASS_GRADIENT))
      .def("poll",
           [](Sender& s, int64_t now) {
             std::vector<OutPacket> out;
             s.poll(now, out);
             return packets(out);
           })
      .def("receive",
           [](Sender& s, const py::tuple& h, const py::object& payload, int64_t now, bool ce) {
             PayloadView p(payload);
             s.receive(to_header(h), p.p, now, ce);
           })
      .def("next_timeout", [](Sender& s) { return optional_int(s.next_timeout()); })
      .def("take_completed",
           [](Sender& s) {
             py::list out;
             for (const SendResult& r : s.take_completed())
               out.append(py::make_tuple(r.iteration, r.tensor_id, r.nbytes, r.chunks, r.start_ns, r.done_ns,
                                         r.packets, r.retransmissions, r.probe_rounds));
             return out;
           })
      .def("sending", &Sender::sending)
      .def_property_readonly("pending", &Sender::pending)
      .def_property_readonly("inflight", &Sender::inflight)
      .def_readonly("payload_size", &Sender::payload_size)
      .def_readonly("bounded_loss", &Sender::bounded_loss)
      .def_readonly("timeouts", &Sender::timeouts)
      .def_readonly("losses", &Sender::losses)
      .def_readonly("malformed", &Sender::malformed)
      .def_readonly("spurious", &Sender::spurious)
      .def_readonly("tail_probes", &Sender::tail_probes)
      .def_property_readonly("reo_mult", &Sender::reo_mult)
      .def_property_readonly("cc", [](Sender& s) -> CongestionControl& { return s.cc; },
                             py::return_value_policy::reference_internal)
      .def_property_readonly("rtt", [](Sender& s) -> RttEstimator& { return s.rtt; },
                             py::return_value_policy::reference_internal);

  py::class_<Receiver>(m, "TransportReceiver")
      .def("receive",
           [](Receiver& r, const py::tuple& h, const py::object& payload, int64_t now, bool ce) {
             PayloadView p(payload);
             r.receive(to_header(h), p.p, now, ce);
           })
      .def("poll",
           [](Receiver& r, int64_t now) {
             std::vector<OutPacket> out;
             r.poll(now, out);
             return packets(out);
           })
      .def("next_timeout", [](const Receiver& r) { return optional_int(r.next_timeout()); })
      .def("take_delivered",
           [](Receiver& r) {
             py::list out;
             for (Delivery& d : r.take_delivered()) out.append(delivery(d));
             return out;
           })
      .def_property_readonly("pending", &Receiver::pending)
      .def_readonly("payload_size", &Receiver::payload_size)
      .def_readonly("bounded_loss", &Receiver::bounded_loss)
      .def_readonly("malformed", &Receiver::malformed);

  // header.py `DlcpHeader.pack` and `unpack` (the differential tests hold them to it):
  // unpack gives the 15 fields, or the name of the first rule the bytes break.
  m.def("pack_header", [](const py::tuple& fields) {
    uint8_t out[HEADER_LEN];
    pack_header(to_header(fields), out);
    return py::bytes(reinterpret_cast<const char*>(out), HEADER_LEN);
  });
  m.def("unpack_header", [](const py::bytes& b) -> py::object {
    const std::string s = b;
    Header h;
    const HeaderError e = unpack_header(reinterpret_cast<const uint8_t*>(s.data()), s.size(), h);
    if (e != HeaderError::NONE) return py::str(header_error_name(e));
    // The wire's send time is unsigned, as Python reads it (the core's clock never reaches 2**63).
    return py::make_tuple(h.type, h.flags, h.priority, h.mag_class, h.job, h.src_rank, h.dst_rank, h.payload_len,
                          h.iteration, h.tensor_id, h.chunk_index, h.chunk_count, h.offset, uint64_t(h.send_ts_ns),
                          h.tclass);
  });

  bind_endpoints<ReliableSender, ReliableReceiver>(m, "ReliableSender", "ReliableReceiver");
  bind_endpoints<DlcpSender, DlcpReceiver>(m, "DlcpSender", "DlcpReceiver");

  m.def(
      "run_transport_pair",
      [](Sender& s, Receiver& r, const py::dict& forward, const py::dict& backward, int64_t max_events) {
        auto channel = [](const py::dict& c) {
          return PairChannel(c["seed"].cast<uint64_t>(), c["loss"].cast<double>(), c["delay_ns"].cast<int64_t>(),
                             c["rate_bps"].is_none() ? 0.0 : c["rate_bps"].cast<double>());
        };
        PairChannel fwd = channel(forward), back = channel(backward);
        PairStats st;
        {
          py::gil_scoped_release nogil;  // payload owners take the GIL back to let go
          st = run_pair(s, r, fwd, back, max_events);
        }
        py::dict d;
        d["events"] = st.events;
        d["end_ns"] = st.end_ns;
        d["packets"] = st.packets;
        d["forward_sent"] = fwd.sent;
        d["forward_lost"] = fwd.lost;
        d["backward_sent"] = back.sent;
        d["backward_lost"] = back.lost;
        d["stuck"] = st.stuck;
        return d;
      },
      py::arg("sender"), py::arg("receiver"), py::arg("forward"), py::arg("backward"), py::arg("max_events"));
}

}  // namespace dlcp_bindings
