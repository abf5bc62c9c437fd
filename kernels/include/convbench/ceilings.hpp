// What the hardware does on a case, without the case's arithmetic: the measured ceilings of the
// memory-bound and launch-bound kernels (the causal depthwise conv1d, its decode steps).
//   DeviceCopy   a device-to-device copy (cudaMemcpyAsync) of a case's bytes on its own stream
//   EmptyLaunch  a kernel of one block of one thread that stores one word, on its own stream
// Each checks its own product: a poisoned destination that the work must overwrite exactly.
// Plain C++: no CUDA headers. Declared only when the build has CUDA (CONVBENCH_HAVE_CUDA == 1).
#pragma once

#include <cstddef>
#include <cstdint>

#if CONVBENCH_HAVE_CUDA

namespace convbench::ceilings {

// Deliberate defects, for the tests that show the checks have teeth (never used by an arm).
enum class Fault {
  none,
  short_copy,     // the copy leaves its last 16 bytes unwritten
  skipped_launch, // launch() counts the launch but never enqueues it
};

// The bytes each side of a copy moves for a case that must move `min_bytes` in total (read and
// written): half of it, rounded up to a multiple of 16, at least 16.
size_t copy_bytes(double min_bytes);

// What a check found: `bytes` compared (the copy's) or 1 (the launch's word), `mismatches` of
// them that differ from what the work must have written.
struct SelfCheck {
  int64_t compared = 0;
  int64_t mismatches = 0;
  bool pass() const { return compared > 0 && mismatches == 0; }
};

// A resident copy: source (a seeded byte pattern that never holds 0xFF) and destination allocated
// and filled once, a non-blocking stream of its own. Only launch() belongs in a timed region.
class DeviceCopy {
public:
  DeviceCopy(size_t bytes, uint64_t seed = 1, Fault fault = Fault::none);
  ~DeviceCopy();
  DeviceCopy(const DeviceCopy &) = delete;
  DeviceCopy &operator=(const DeviceCopy &) = delete;

  void launch();        // enqueues the copy source -> destination on stream()
  void *stream() const; // a cudaStream_t
  void sync();          // waits for stream()
  void poison();        // fills the destination with 0xFF bytes (synchronises)
  // The destination against the source, byte for byte, on the device. Synchronises.
  SelfCheck check() const;

  size_t bytes() const { return bytes_; }
  static double device_bytes(size_t bytes) { return 2.0 * double(bytes); }

private:
  void release();
  size_t bytes_;
  Fault fault_;
  void *stream_ = nullptr, *src_ = nullptr, *dst_ = nullptr;
};

// An (almost) empty launch: one block of one thread stores the launch's sequence number (1, 2,
// ...) to one device word, on a non-blocking stream of its own.
class EmptyLaunch {
public:
  explicit EmptyLaunch(Fault fault = Fault::none);
  ~EmptyLaunch();
  EmptyLaunch(const EmptyLaunch &) = delete;
  EmptyLaunch &operator=(const EmptyLaunch &) = delete;

  void launch();        // enqueues one launch on stream(), numbered sequence() + 1
  void *stream() const; // a cudaStream_t
  void sync();          // waits for stream()
  void poison();        // sets the word to all ones, a number no launch stores (synchronises)
  // The word against the last launch's sequence number. Synchronises.
  SelfCheck check() const;

  uint64_t sequence() const { return sequence_; }
  static double device_bytes() { return sizeof(uint64_t); }

private:
  void release();
  Fault fault_;
  uint64_t sequence_ = 0;
  void *stream_ = nullptr, *word_ = nullptr;
};

} // namespace convbench::ceilings

#endif // CONVBENCH_HAVE_CUDA
