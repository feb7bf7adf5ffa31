#include "switch/switch.hpp"

#include <stdexcept>
#include <string>

#include "switch/queue_managers.hpp"
#include "switch/schedulers.hpp"

namespace dlcp {

Switch::Switch(const std::vector<PortConfig>& ports_, const std::vector<std::vector<int>>& routes,
               const std::vector<int>& default_route, const PipelineSpec& spec,
               bool record_drops)
    : rx_packets(ports_.size()),
      rx_bytes(ports_.size()),
      load_balancer_(make_load_balancer(spec.load_balancer)),
      classifier_(make_classifier(spec.classifier)) {
  drop_log.on = record_drops;
  const int n_classes = classifier_->n_classes;
  for (size_t i = 0; i < ports_.size(); ++i)
    ports.push_back(std::make_unique<EgressPort>(
        static_cast<int>(i), ports_[i], make_queue_manager(spec.queue_manager),
        make_scheduler(spec.scheduler), n_classes, pool_, drop_log));
  if (ports.size() >= NO_ROUTE_CODE)
    throw std::invalid_argument("a switch has at most " + std::to_string(NO_ROUTE_CODE - 1) + " ports, got " +
                                std::to_string(ports.size()));
  std::map<std::vector<int>, uint16_t> codes;
  // An empty list: no route of its own (the default route, if any), as a key Python's
  // route table lacks.
  routes_.reserve(routes.size());
  for (const auto& numbers : routes) routes_.push_back(numbers.empty() ? NO_ROUTE_CODE : route_code(numbers, codes));
  if (!default_route.empty()) default_ = route_code(default_route, codes);
}

uint16_t Switch::route_code(const std::vector<int>& numbers,
                            std::map<std::vector<int>, uint16_t>& codes) {
  for (int n : numbers)
    if (n < 0 || n >= static_cast<int>(ports.size()))
      throw std::invalid_argument("a route names port index " + std::to_string(n) + " of " +
                                  std::to_string(ports.size()));
  if (numbers.size() == 1) return static_cast<uint16_t>(numbers[0]);
  auto it = codes.find(numbers);
  if (it != codes.end()) return it->second;
  const size_t code = ports.size() + port_sets_.size();
  if (code >= NO_ROUTE_CODE)
    throw std::invalid_argument("a switch's ports and distinct equal-cost port lists must number below " +
                                std::to_string(NO_ROUTE_CODE) + ", got " + std::to_string(code + 1));
  PortSet set;
  set.id = static_cast<int>(port_sets_.size());
  for (int n : numbers) set.ports.push_back(ports[n].get());
  port_sets_.push_back(std::move(set));
  codes[numbers] = static_cast<uint16_t>(code);
  return static_cast<uint16_t>(code);
}

int Switch::receive(const Packet& arriving, int in_port, int64_t now, Slot* slot_out) {
  if (in_port < 0 || in_port >= static_cast<int>(ports.size()))
    throw std::out_of_range("no input port index " + std::to_string(in_port));
  if (arriving.prio > 7 || arriving.mag > 7)
    throw std::invalid_argument("packet uid " + std::to_string(arriving.uid) +
                                ": prio and mag must be in 0..7");
  if (slot_out) *slot_out = NO_SLOT;
  rx_packets[in_port] += 1;
  rx_bytes[in_port] += arriving.size;
  const uint16_t code = arriving.dst >= 0 && arriving.dst < static_cast<int>(routes_.size()) &&
                                routes_[arriving.dst] != NO_ROUTE_CODE
                            ? routes_[arriving.dst]
                            : default_;
  if (code == NO_ROUTE_CODE) {
    no_route += 1;
    if (drop_log.on) drop_log.records.push_back({now, in_port, NO_ROUTE, NO_SLOT, arriving});
    return -1;
  }
  // The load balancer is asked only when there is a choice to make.
  EgressPort* port = code < ports.size() ? ports[code].get()
                                         : load_balancer_->choose(arriving, port_sets_[code - ports.size()]);
  const Slot slot = pool_.alloc(arriving);
  if (slot_out) *slot_out = slot;
  Packet& pkt = pool_[slot];
  pkt.cls = static_cast<uint8_t>(classifier_->classify(pkt));
  pkt.arrival = now;
  if (!port->in_busy) {
    port->in_busy = true;
    busy_.push_back(port);
  }
  if (port->busy_until <= now) {
    if (!port->mask && pkt.size <= port->idle_limit) {
      port->send_idle(slot, now);
      return port->number;
    }
    // Serialisations due before this arrival start first, among earlier arrivals only
    // (causal), and the queue manager then sees the true occupancy.
    port->start(now);
  }
  port->qm->enqueue(*port, slot, now);
  return port->number;
}

void Switch::poll(int64_t now, std::vector<Departure>& out) {
  size_t kept = 0;
  for (EgressPort* port : busy_) {
    // start() and release() are called only when they have something to do: a caller that
    // polls at every arrival mostly finds nothing due.
    if (port->mask && port->busy_until <= now) port->start(now);
    if (!port->inflight.empty() && pool_[port->inflight.front()].depart <= now)
      port->release(now, out);
    if (!port->mask && port->inflight.empty())
      port->in_busy = false;
    else
      busy_[kept++] = port;
  }
  busy_.resize(kept);
}

std::optional<int64_t> Switch::next_event_time() const {
  std::optional<int64_t> t;
  for (const EgressPort* port : busy_) {
    const std::optional<int64_t> e = port->next_event();
    if (e && (!t || *e < *t)) t = e;
  }
  return t;
}

int64_t Switch::backlog() const {
  int64_t n = 0;
  for (const auto& p : ports) n += p->packets + static_cast<int64_t>(p->inflight.size());
  return n;
}

std::pair<int64_t, int64_t> Switch::conservation() const {
  int64_t taken = 0;
  for (int64_t n : rx_packets) taken += n;
  int64_t accounted = no_route;
  for (const auto& p : ports) {
    const PortCounters& c = p->counters;
    accounted += c.tx_packets + p->packets + static_cast<int64_t>(p->inflight.size());
    for (int64_t d : c.drops) accounted += d;
  }
  return {taken, accounted};
}

namespace {

void write(const std::vector<Departure>& out, const std::vector<int64_t>& port_numbers,
           DepartureColumns& c) {
  for (const Departure& d : out) {
    const size_t i = c.rows++;
    c.uid[i] = d.pkt.uid;
    c.port[i] = port_numbers[d.port];
    c.depart[i] = d.pkt.depart;
    c.cls[i] = d.pkt.cls;
    c.rewrite[i] = d.pkt.rewrite;
    c.size[i] = d.pkt.size;
  }
}

void write(std::vector<DropRecord>& records, const std::vector<int64_t>& port_numbers,
           DropColumns& c) {
  for (const DropRecord& d : records) {
    const size_t i = c.rows++;
    c.uid[i] = d.pkt.uid;
    c.port[i] = port_numbers[d.port];
    c.reason[i] = d.reason;
    c.time[i] = d.now;
  }
  records.clear();
}

}  // namespace

void run_arrivals(Switch& sw, const Arrivals& a, const std::vector<int64_t>& port_numbers,
                  DepartureColumns& departures, DropColumns& drops) {
  // Every drop is recorded for the columns; what the switch had recorded stays as it was.
  DropLog saved;
  std::swap(saved, sw.drop_log);
  sw.drop_log.on = true;
  std::vector<Departure> out;  // one poll's departures
  try {
    for (size_t i = 0; i < a.n; ++i) {
      Packet pkt;
      pkt.uid = a.uid[i];
      pkt.size = static_cast<int32_t>(a.size[i]);
      pkt.dst = static_cast<int32_t>(a.dst[i]);
      pkt.flow = a.flow[i];
      pkt.prio = static_cast<uint8_t>(a.prio[i]);
      pkt.mag = static_cast<uint8_t>(a.mag[i]);
      pkt.tclass = static_cast<uint8_t>(a.tclass[i]);
      pkt.layer = static_cast<int32_t>(a.layer[i]);
      pkt.header_size = static_cast<int32_t>(a.header_size[i]);
      pkt.rewrite = static_cast<uint8_t>(a.rewrite[i]);
      pkt.droppable = a.droppable[i];
      pkt.dlcp = a.dlcp[i];
      pkt.ect = a.ect[i];
      pkt.ce = a.ce[i];
      pkt.job = static_cast<uint16_t>(a.job[i]);
      const int64_t t = a.time[i];
      sw.receive(pkt, static_cast<int>(a.in_port[i]), t);
      if (!sw.drop_log.records.empty()) write(sw.drop_log.records, port_numbers, drops);
      sw.poll(t, out);
      write(out, port_numbers, departures);
      out.clear();
    }
    for (std::optional<int64_t> t = sw.next_event_time(); t; t = sw.next_event_time()) {
      sw.poll(*t, out);
      write(out, port_numbers, departures);
      out.clear();
    }
  } catch (...) {
    std::swap(saved, sw.drop_log);
    throw;
  }
  std::swap(saved, sw.drop_log);
}

}  // namespace dlcp
