// Asking the caches for a line ahead of its use. Not __builtin_prefetch alone: GCC counts it as
// free of side effects, so a function that only prefetches is found pure and a call to it that
// is not inlined is dropped (the network's look-ahead compiled to nothing that way). A volatile
// asm stays wherever it is written, and reads nothing: an address past an array's end is safe.
#pragma once

namespace dlcp {

inline void prefetch(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

// Every line of [p, p + size) for an object of at most two lines: its first and last byte's.
inline void prefetch_both_ends(const void* p, unsigned long size) {
  prefetch(p);
  prefetch(static_cast<const char*>(p) + size - 1);
}

}  // namespace dlcp
