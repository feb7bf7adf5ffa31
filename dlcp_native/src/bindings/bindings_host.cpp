// Python binding of a host's compiled data plane (dlcp_native._core.UdpHost, udp_host.hpp).
// dlcp_emu/emu/native_host.py drives it from the host processes.
#include <arpa/inet.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>

#include "bindings/bindings.hpp"
#include "host/udp_host.hpp"

namespace dlcp_bindings {

namespace {

using namespace dlcp;

sockaddr_in address(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) throw py::value_error("not an IPv4 address: " + ip);
  return a;
}

// The UdpHost and the Python endpoints whose cores its stack points to.
struct Host {
  std::unique_ptr<UdpHost> host;
  py::list held;
};

}  // namespace

void bind_host(py::module_& m) {
  py::class_<Host>(m, "UdpHost")
      // fd: the bound UDP socket; receiver: a core receiver (dlcp_native._core.*Receiver);
      // job; peers: {rank: (ip, port)}; agent_reads: the agent takes the receiver's tensors
      // (training) or they are let go (background flows).
      .def(py::init([](int fd, const py::object& receiver, int job, const std::map<int, std::pair<std::string, int>>& peers,
                       bool agent_reads, bool ecn, bool measure_lag, size_t batch, int wake_fd, size_t lag_limit,
                       bool control_first) {
             if (job < 0 || job > 0xFFFF) throw py::value_error("job must be in 0..65535, got " + std::to_string(job));
             sockaddr_in self{};
             socklen_t len = sizeof self;
             if (getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len) != 0 || self.sin_family != AF_INET)
               throw py::value_error("UdpHost: fd is not a bound IPv4 socket");
             const int ranks = peers.empty() ? 0 : peers.rbegin()->first + 1;
             std::vector<sockaddr_in> where(size_t(ranks), sockaddr_in{});
             StackWire wire{true, ecn, ntohs(self.sin_port), int64_t(ntohl(self.sin_addr.s_addr)),
                            std::vector<int32_t>(size_t(ranks), -1), std::vector<int64_t>(size_t(ranks), 0)};
             for (const auto& [rank, at] : peers) {
               if (rank < 0 || rank > 0xFFFF) throw py::value_error("peer rank out of 0..65535: " + std::to_string(rank));
               where[size_t(rank)] = address(at.first, at.second);
               wire.host_of_rank[size_t(rank)] = 0;  // reachable: the kernel routes it
               wire.ip_of_rank[size_t(rank)] = int64_t(ntohl(where[size_t(rank)].sin_addr.s_addr));
             }
             auto stack = std::make_unique<HostStack>(0, uint16_t(job), receiver.cast<transport::Receiver*>(),
                                                      std::move(wire), agent_reads);
             Host h{std::make_unique<UdpHost>(fd, std::move(stack), std::move(where), ecn, measure_lag, batch, wake_fd,
                                              lag_limit, control_first),
                    py::list()};
             h.held.append(receiver);
             return h;
           }),
           py::arg("fd"), py::arg("receiver"), py::arg("job"), py::arg("peers"), py::arg("agent_reads"),
           py::arg("ecn") = true, py::arg("measure_lag") = false, py::arg("batch") = 32, py::arg("wake_fd") = -1,
           py::arg("lag_limit") = 10000, py::arg("control_first") = false)
      .def("add_sender",
           [](Host& h, const py::object& sender) {
             h.host->stack().add_sender(sender.cast<transport::Sender*>());
             h.held.append(sender);
           })
      .def("run",
           [](Host& h, int64_t until) {
             py::gil_scoped_release released;  // payload owners take the GIL back to let go
             return static_cast<int>(h.host->run(until));
           })
      .def("set_agent_timer", [](Host& h, std::optional<int64_t> t) { h.host->stack().agent_timer = t; })
      .def("take_completions", [](Host& h) { return stack_completions(h.host->stack()); })
      .def("take_rx_lag",
           [](Host& h) {
             const std::vector<int64_t> v = h.host->take_rx_lag();
             return py::array_t<int64_t>(py::ssize_t(v.size()), v.data());
           })
      .def("record_packets",
           [](Host& h, int64_t max_records) { h.host->stack().records = std::make_unique<PacketRecords>(max_records); })
      .def("packet_records", [](Host& h) { return stack_packet_records(h.host->stack()); })
      .def_property_readonly("backlog", [](const Host& h) { return h.host->backlog(); })
      .def("counters", [](const Host& h) {
        const UdpHostCounters& c = h.host->counters;
        py::dict d;
        d["sent"] = c.sent;
        d["received"] = c.received;
        d["malformed"] = c.malformed;
        d["unroutable"] = c.unroutable;
        d["send_errors"] = c.send_errors;
        d["socket_errors"] = c.socket_errors;
        return d;
      });
}

}  // namespace dlcp_bindings
