// Tensor memory, measured: LibTorch's CPU allocator wrapped to count the bytes live and their peak.
// `sweep bench` sets it beside the memory plan (src/memory_plan); the plan's tests measure with it too.
#pragma once

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>


namespace sweep {

// The context of every DataPtr it hands out is the data pointer itself, as raw_allocate (oneDNN's
// path) requires; the bookkeeping lives for the whole process, since tensors allocated while
// counting (an optimizer's state) may be freed after counting stopped.
class CountingAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    c10::DataPtr inner = m_base->allocate(n);
    void* p = inner.get();
    Books& b = books();
    std::lock_guard<std::mutex> lock(b.mutex);
    b.live += static_cast<int64_t>(n);
    b.peak = std::max(b.peak, b.live);
    b.blocks.emplace(p, Block{std::move(inner), n});
    return {p, p, &release, c10::Device(c10::kCPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }

  // Counts from now on, until the destructor puts the previous allocator back.
  CountingAllocator() : m_base(c10::GetCPUAllocator()) {
    std::lock_guard<std::mutex> lock(books().mutex);
    books().peak = books().live;
    m_start = books().live;
    c10::SetCPUAllocator(this, k_priority);
  }
  ~CountingAllocator() override { c10::SetCPUAllocator(m_base, k_priority); }
  CountingAllocator(const CountingAllocator&) = delete;
  CountingAllocator& operator=(const CountingAllocator&) = delete;

  // The bytes allocated through it and live now, above those live when it was installed or restarted.
  double live_mib() const {
    std::lock_guard<std::mutex> lock(books().mutex);
    return static_cast<double>(books().live - m_start) / (1 << 20);
  }
  // Counts from here: what is live now is the new start, and the peak starts from it.
  void restart() {
    std::lock_guard<std::mutex> lock(books().mutex);
    books().peak = books().live;
    m_start = books().live;
  }
  // The peak of the bytes allocated through it and live at once since it was installed (or restarted).
  double peak_mib() const {
    std::lock_guard<std::mutex> lock(books().mutex);
    return static_cast<double>(books().peak - m_start) / (1 << 20);
  }

 private:
  struct Block {
    c10::DataPtr inner;
    size_t n;
  };
  struct Books {
    std::mutex mutex;
    int64_t live = 0, peak = 0;
    std::map<void*, Block> blocks;
  };
  static Books& books() {
    static auto* b = new Books;  // never destroyed: late frees still find it
    return *b;
  }
  static void release(void* p) {
    c10::DataPtr inner;
    {
      Books& b = books();
      std::lock_guard<std::mutex> lock(b.mutex);
      auto it = b.blocks.find(p);
      if (it == b.blocks.end()) {
        return;
      }
      b.live -= static_cast<int64_t>(it->second.n);
      inner = std::move(it->second.inner);
      b.blocks.erase(it);
    }
    // inner frees the memory here, outside the lock
  }
  static constexpr uint8_t k_priority = 200;
  c10::Allocator* m_base;
  int64_t m_start = 0;
};

}  // namespace sweep
