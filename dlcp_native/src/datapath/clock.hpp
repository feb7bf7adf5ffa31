// CLOCK_MONOTONIC in integer nanoseconds (Python's time.monotonic_ns), and back to a
// timespec for the kernel's timed waits: the emulator's loops share both.
#pragma once

#include <time.h>

#include <cstdint>

namespace dlcp {

inline int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

inline timespec timespec_of(int64_t ns) { return {time_t(ns / 1000000000), long(ns % 1000000000)}; }

}  // namespace dlcp
