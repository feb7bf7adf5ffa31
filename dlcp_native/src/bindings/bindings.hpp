// What the bindings share (bindings.cpp: the switch; bindings_network.cpp: the network;
// bindings_transport.cpp: the transport endpoints; bindings_host.cpp: a host's data plane):
// conversions from Python's values, and nothing of the model.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <vector>

#include "host/host_stack.hpp"
#include "net/network.hpp"
#include "transport/transport_congestion.hpp"
#include "switch/port.hpp"
#include "switch/registry.hpp"
#include "switch/switch.hpp"

namespace dlcp_bindings {

namespace py = pybind11;

// (rate_bps, delay_ns, buffer_bytes, buffer_packets, overhead_bytes) per port.
std::vector<dlcp::PortConfig> port_configs(const std::vector<py::tuple>& ports);
// {stage: (name, {parameter: value})} for the four stages.
dlcp::PipelineSpec pipeline(const py::dict& stages);
// A switch's counters by port index, reasons by code (dlcp_native/switch.py names them).
py::dict counters(const dlcp::Switch& sw);
// Live bytes queued at each port of a switch, by index (a queue sample's occupancy).
std::vector<int64_t> queued_bytes(const dlcp::Switch& sw);

// A host stack's completed sends since the last call (SendResult tuples), and its packet
// records (PacketLog.records(): {"sent", "received": {column: array}, "overflow"}; ValueError if
// none taken).
py::list stack_completions(dlcp::HostStack& st);
py::dict stack_packet_records(const dlcp::HostStack& st);

// A sender's settings as transport/native.py gives them (cc_settings, rtt_settings).
dlcp::transport::CongestionControl make_cc(const py::dict& c);
dlcp::transport::RttEstimator make_rtt(const py::dict& r);

// A schedule agent in the core (bindings_schedule.cpp): adopted by stack `id` of `net`; its
// state and its records, as numpy columns.
void attach_schedule_agent(dlcp::Network& net, uint32_t id, int32_t rank, const py::tuple& columns,
                           int64_t compute_ns, int64_t iterations, bool sizes, uint64_t seed, const py::tuple& spec);
py::tuple agent_state(const dlcp::Network& net, uint32_t id);
py::dict take_agent_records(dlcp::Network& net, uint32_t id);

// A worker's collectives in the core (bindings_collectives.cpp): adopted by stack `id`, begun,
// and taken back when they end; a stack's deliveries (its agent's or its collectives') as columns.
void attach_collectives(dlcp::Network& net, uint32_t id, int32_t rank, const py::tuple& policy);
py::object begin_collective(dlcp::Network& net, uint32_t id, int64_t iteration, int64_t priority, int64_t tclass,
                            const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& steps,
                            const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& mag_ptr,
                            const py::array_t<double, py::array::c_style | py::array::forcecast>& mags, int64_t now);
py::object take_ended_collective(dlcp::Network& net, uint32_t id);
py::dict delivery_columns(const dlcp::HostStack& st);
py::dict collectives_deliveries(const dlcp::Network& net, uint32_t id);

// The model inside a dlcp_native._core.Switch object (the datapath loop drives it).
dlcp::Switch& core_switch(py::handle core);

void bind_datapath(py::module_& m);
void bind_network(py::module_& m);
void bind_transport(py::module_& m);
void bind_host(py::module_& m);

}  // namespace dlcp_bindings
