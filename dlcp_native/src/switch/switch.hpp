// The switch (switch_models/switch.py): route -> load balancer -> classifier -> queue manager
// -> scheduler -> port.
//
// Sans-I/O: the caller hands in packets with the current time (`receive`), asks what leaves by
// a time (`poll`), and asks when it next has to ask (`next_event_time`). Plain C++ with no
// Python in it, so an event loop can hold many switches and drive them directly; ports and
// destinations are dense indices (a driver maps its own names to them).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "base/prefetch.hpp"
#include "switch/classifiers.hpp"
#include "switch/load_balancers.hpp"
#include "switch/packet.hpp"
#include "switch/port.hpp"
#include "switch/registry.hpp"

namespace dlcp {

class Switch {
 public:
  // routes[d]: the equal-cost egress ports toward destination index d (none: no route of
  // its own); default_route: the
  // ports for any other destination (a host's NIC: one port for all), empty for none.
  // spec.load_balancer's params carry the seed (the driver salts it per switch).
  Switch(const std::vector<PortConfig>& ports, const std::vector<std::vector<int>>& routes,
         const std::vector<int>& default_route, const PipelineSpec& spec, bool record_drops);

  // Take in one packet that arrived on `in_port` at `now`; returns the egress port it was
  // handed to (admitted or not), or -1 without a route. `slot` is where the switch holds it
  // (NO_SLOT without a route) until a Departure or DropRecord names it.
  int receive(const Packet& pkt, int in_port, int64_t now, Slot* slot = nullptr);
  // Ask the caches for what `receive(pkt, in_port, ...)` reads first (the loop's look-ahead):
  // the route's entry and the input port's counters. Changes nothing.
  void prefetch(const Packet& pkt, int in_port) const {
    if (pkt.dst >= 0 && pkt.dst < static_cast<int>(routes_.size())) dlcp::prefetch(&routes_[pkt.dst]);
    if (in_port >= 0 && in_port < static_cast<int>(rx_packets.size())) {
      dlcp::prefetch(&rx_packets[in_port]);
      dlcp::prefetch(&rx_bytes[in_port]);
    }
  }
  // The packet in `slot` as the switch left it (class, arrival, a trimmed size, a CE mark):
  // readable until the next receive, even once dropped.
  const Packet& held(Slot slot) const { return pool_[slot]; }
  // Packets that leave by `now`, in order of departure per port.
  void poll(int64_t now, std::vector<Departure>& out);
  // When `poll` next has something to do (possibly already past), or none if idle.
  std::optional<int64_t> next_event_time() const;

  // -- accounting -------------------------------------------------------------------------
  // Packets taken in but not yet released: queued plus in flight.
  int64_t backlog() const;
  // (packets in, packets accounted): in = sent + dropped by reason + queued + in flight.
  std::pair<int64_t, int64_t> conservation() const;

  std::vector<std::unique_ptr<EgressPort>> ports;
  std::vector<int64_t> rx_packets, rx_bytes;  // by input port
  int64_t no_route = 0;
  DropLog drop_log;

 private:
  uint16_t route_code(const std::vector<int>& numbers, std::map<std::vector<int>, uint16_t>& codes);

  PacketPool pool_;
  std::unique_ptr<LoadBalancer> load_balancer_;
  std::unique_ptr<Classifier> classifier_;
  // A route as a code of two bytes, so that a switch's routes toward a thousand hosts take a
  // few cache lines, not pointers to chase: NO_ROUTE_CODE (none of its own), a port index
  // (one port: the load balancer is not asked), or ports.size() + i for the equal-cost set
  // port_sets_[i]. One set per distinct ordered list of ports: a fat-tree switch has a
  // thousand routes but a handful of sets.
  static constexpr uint16_t NO_ROUTE_CODE = 0xFFFF;
  std::vector<uint16_t> routes_;
  uint16_t default_ = NO_ROUTE_CODE;
  std::vector<PortSet> port_sets_;
  std::vector<EgressPort*> busy_;  // ports with queued or in-flight packets
};

// A sequence of arrivals as columns (one entry per packet), for `run_arrivals`.
struct Arrivals {
  size_t n = 0;
  const int64_t *uid, *size, *dst, *flow, *prio, *mag, *tclass, *layer, *header_size, *rewrite;
  const int64_t *in_port, *time, *job;
  const bool *droppable, *dlcp, *ect, *ce;
};

// Where run_arrivals writes, one row per departure and per drop: columns the caller sized for
// the worst case (every packet leaves, every packet is dropped); `rows` counts what was written.
struct DepartureColumns {
  int64_t *uid, *port, *depart, *cls, *rewrite, *size;
  size_t rows = 0;
};
struct DropColumns {
  int64_t *uid, *port, *reason, *time;
  size_t rows = 0;
};

// Feed every arrival in order, polling at its time as a caller of receive and poll would,
// then poll at each next event until the switch is idle. Every departure and every drop
// (whether or not the switch records drops) is written to the columns; ports are written as
// port_numbers[index].
void run_arrivals(Switch& sw, const Arrivals& arrivals, const std::vector<int64_t>& port_numbers,
                  DepartureColumns& departures, DropColumns& drops);

}  // namespace dlcp
