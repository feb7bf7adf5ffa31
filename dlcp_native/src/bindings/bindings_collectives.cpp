// Python bindings of a worker's collectives in the core (host/worker_collectives.hpp):
// conversion only. dlcp_emu/sim/core_ring.py hands each collective over and takes it back.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "bindings/bindings.hpp"
#include "host/worker_collectives.hpp"

namespace dlcp_bindings {

namespace {

using namespace dlcp;

HostStack& collectives_stack(const Network& net, uint32_t id) {
  HostStack& st = net.stack(id);
  if (!st.collectives) throw py::value_error("stack id " + std::to_string(id) + " has no collectives in the core");
  return st;
}

py::list ranges(const ByteRanges& r) {
  py::list out;
  for (const auto& [a, b] : r) out.append(py::make_tuple(a, b));
  return out;
}

template <class T>
py::array_t<int64_t> col(const std::vector<T>& rows, int64_t T::*field) {
  py::array_t<int64_t> out(py::ssize_t(rows.size()));
  int64_t* p = out.mutable_data();
  for (const T& r : rows) *p++ = r.*field;
  return out;
}

}  // namespace

// policy: (bounded_loss, droppable_fraction, loss_bound).
void attach_collectives(Network& net, uint32_t id, int32_t rank, const py::tuple& policy) {
  try {
    net.stack(id).adopt_collectives(rank, {policy[0].cast<bool>(), policy[1].cast<double>(), policy[2].cast<double>()});
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
}

// steps: an (n, 8) array of (phase, tensor_id, send dst, start, stop, recv src, start, stop),
// -1 for no send / no receive; the steps' sends' magnitudes in `mags`, step k's from
// mag_ptr[k] to mag_ptr[k + 1]. The lost ranges if the collective ended at once, else None.
py::object begin_collective(Network& net, uint32_t id, int64_t iteration, int64_t priority, int64_t tclass,
                            const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& steps,
                            const py::array_t<int64_t, py::array::c_style | py::array::forcecast>& mag_ptr,
                            const py::array_t<double, py::array::c_style | py::array::forcecast>& mags, int64_t now) {
  HostStack& st = collectives_stack(net, id);
  if (steps.ndim() != 2 || steps.shape(1) != 8) throw py::value_error("collective: steps must be an (n, 8) array");
  if (mag_ptr.ndim() != 1 || mags.ndim() != 1) throw py::value_error("collective: mag_ptr and mags must be 1-D arrays");
  Collective c;
  c.iteration = iteration;
  c.priority = priority;
  c.tclass = static_cast<uint8_t>(tclass);
  const int64_t* s = steps.data();
  for (py::ssize_t k = 0; k < steps.shape(0); ++k, s += 8)
    c.steps.push_back({s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]});
  c.mag_ptr.assign(mag_ptr.data(), mag_ptr.data() + mag_ptr.size());
  c.mags.assign(mags.data(), mags.data() + mags.size());
  try {
    if (!st.begin_collective(std::move(c), now)) return py::none();
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
  return ranges(st.collectives->take_ended());
}

// The lost ranges of the collective that ended in the core since (None: none did).
py::object take_ended_collective(Network& net, uint32_t id) {
  HostStack& st = collectives_stack(net, id);
  if (!st.collectives->ended()) return py::none();
  return ranges(st.collectives->take_ended());
}

// stack.py `deliveries` of a stack whose agent or collectives are in the core, as columns
// (lost_by_class: (delivery index, [(class, bytes)]) for those that lost bytes).
py::dict delivery_columns(const HostStack& st) {
  const auto& dv = st.deliveries;
  py::dict del;
  del["src"] = col(dv, &DeliveryRecord::src);
  del["iteration"] = col(dv, &DeliveryRecord::iteration);
  del["tensor_id"] = col(dv, &DeliveryRecord::tensor_id);
  del["nbytes"] = col(dv, &DeliveryRecord::nbytes);
  del["lost_bytes"] = col(dv, &DeliveryRecord::lost_bytes);
  del["first_ns"] = col(dv, &DeliveryRecord::first_ns);
  del["done_ns"] = col(dv, &DeliveryRecord::done_ns);
  py::list by_class;
  for (size_t i = 0; i < dv.size(); ++i)
    if (!dv[i].lost_by_class.empty()) by_class.append(py::make_tuple(i, py::cast(dv[i].lost_by_class)));
  del["lost_by_class"] = by_class;
  return del;
}

py::dict collectives_deliveries(const Network& net, uint32_t id) {
  return delivery_columns(collectives_stack(net, id));
}

}  // namespace dlcp_bindings
