#include "sched/slots.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include "util/error.h"
#include "util/text.h"

namespace sweep {

static int positive(const std::string& text, const std::string& named) {
  size_t end = 0;
  int v = 0;
  try {
    v = std::stoi(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  if (end != text.size() || v < 1) {
    throw Error(named + ": '" + text + "' is not a positive number (examples: cpu, cpu:2x1, cuda:0,1)",
                Exit::bad_input);
  }
  return v;
}

std::vector<Slot> parse_devices(const std::string& spec, int cores, const char* visible, const std::string& where) {
  const std::string named = where.empty() ? "--devices " + spec : where;
  std::vector<Slot> slots;
  if (spec == "cpu") {
    slots.push_back({"cpu:0", std::max(1, cores), "", false});
  } else if (spec.rfind("cpu:", 0) == 0) {
    const std::string shape = spec.substr(4);
    const size_t x = shape.find('x');
    if (x == std::string::npos) {
      throw Error(named + ": expected cpu:NxT, e.g. cpu:2x1 (2 slots of 1 thread)", Exit::bad_input);
    }
    const int n = positive(shape.substr(0, x), named), t = positive(shape.substr(x + 1), named);
    for (int i = 0; i < n; ++i) {
      slots.push_back({"cpu:" + std::to_string(i), t, "", false});
    }
  } else if (spec.rfind("cuda:", 0) == 0) {
    const auto ids = split(spec.substr(5), ',');
    const std::vector<std::string> inherited = visible != nullptr ? split(visible, ',') : std::vector<std::string>{};
    for (const auto& id : ids) {
      if (id.empty() || id.size() > 4 || id.find_first_not_of("0123456789") != std::string::npos) {
        throw Error(named + ": '" + id + "' is not a GPU index (example: cuda:0,1)", Exit::bad_input);
      }
      const size_t index = std::stoul(id);
      if (visible != nullptr && index >= inherited.size()) {
        throw Error(named + ": cuda:" + id + " is not among the " +
                        (inherited.size() == 1 ? std::string("1 GPU") : std::to_string(inherited.size()) + " GPUs") +
                        " CUDA_VISIBLE_DEVICES=" + visible + " leaves this process — count from 0 within them",
                    Exit::bad_input);
      }
      slots.push_back({"cuda:" + id, std::max(1, cores / static_cast<int>(ids.size())),
                       visible != nullptr ? trim(inherited[index]) : id, false});
    }
  } else {
    throw Error(named + ": expected cpu, cpu:NxT or cuda:I,J,...", Exit::bad_input);
  }
  return slots;
}

std::string visible_devices(const std::vector<const Slot*>& slots) {
  std::vector<std::string> ids;
  for (const Slot* s : slots) {
    if (std::find(ids.begin(), ids.end(), s->cuda_visible) == ids.end()) {
      ids.push_back(s->cuda_visible);
    }
  }
  std::string out;
  for (const auto& id : ids) {
    out += (out.empty() ? "" : ",") + id;
  }
  return out;
}

int driver_gpu_count() {
  namespace fs = std::filesystem;
  std::error_code ec;
  int physical = 0;
  if (fs::is_directory("/proc/driver/nvidia/gpus", ec)) {
    for (auto it = fs::directory_iterator("/proc/driver/nvidia/gpus", ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      ++physical;
    }
  } else if (fs::is_directory("/dev", ec)) {
    const std::regex gpu("nvidia[0-9]+");
    for (auto it = fs::directory_iterator("/dev", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      physical += std::regex_match(it->path().filename().string(), gpu);
    }
  }
  return physical;
}

int visible_gpu_count(int physical, const char* visible) {
  if (visible == nullptr) {
    return physical;
  }
  int n = 0;
  for (const std::string& entry : split(visible, ',')) {
    const std::string id = trim(entry);
    const bool index = !id.empty() && id.size() <= 4 && id.find_first_not_of("0123456789") == std::string::npos &&
                       std::stoi(id) < physical;
    if (!index && id.rfind("GPU-", 0) != 0 && id.rfind("MIG-", 0) != 0) {
      break;
    }
    ++n;
  }
  return std::min(n, physical);
}

}  // namespace sweep
