#include "report/until_decided.h"

#include <algorithm>

namespace sweep {

std::map<std::string, int64_t> next_round(const Analysis& a) {
  std::map<std::string, int64_t> out;
  if (!a.design.sequential()) {
    return out;
  }
  if (a.ladder) {
    // Each rung as a study of its own; and an intervention whose trend is undecided while its
    // rungs are decided gets `first` more seeds at every rung (each rung's precision narrows the line).
    for (size_t k = 0; k < a.rungs.size(); ++k) {
      const Analysis& rung = a.rungs[k];
      for (const auto& [name, n] : next_round(rung)) {
        out[name] = n;
      }
      for (const auto& t : a.ladder->trends) {
        const auto v = std::find_if(rung.variants.begin(), rung.variants.end(),
                                    [&](const VariantStats& s) { return s.name == t.rung_variants[k]; });
        if (t.verdict != TrendVerdict::undecided || v == rung.variants.end() || v->halted || out.count(v->name) ||
            v->seeds_planned >= a.design.max_seeds) {
          continue;
        }
        const int64_t n = std::min(v->seeds_planned + a.design.first, a.design.max_seeds);
        out[v->name] = n;
        const auto base = std::find_if(rung.variants.begin(), rung.variants.end(),
                                       [](const VariantStats& s) { return s.is_baseline; });
        if (base != rung.variants.end() && n > base->seeds_planned) {
          out[base->name] = std::max(out[base->name], n);
        }
      }
    }
    return out;
  }
  if (a.tuned) {
    // The arms whose verdict at their best is open get seeds at every value tried — not those
    // whose best lies at an edge of the values: seeds cannot move it; the grid must.
    Analysis at_best = a;
    at_best.variants.clear();
    for (const auto& v : a.tuned->at_best) {
      const auto arm = std::find_if(a.tuned->arms.begin(), a.tuned->arms.end(),
                                    [&](const TunedArm& t) { return t.arm == v.name; });
      if (v.is_baseline || arm == a.tuned->arms.end() || arm->outcome != TunedOutcome::extend_grid) {
        at_best.variants.push_back(v);
      }
    }
    at_best.tuned.reset();
    for (const auto& [arm, n] : next_round(at_best)) {
      for (const auto& t : a.tuned->arms) {
        if (t.arm == arm) {
          for (const auto& v : t.variants) {
            out[v] = n;
          }
        }
      }
    }
    return out;
  }
  int64_t most = 0;
  for (const auto& v : a.variants) {
    const bool open = v.verdict == Verdict::undecided || v.margin_open;
    if (!v.is_baseline && open && !v.halted && v.seeds_planned < a.design.max_seeds) {
      const int64_t n = std::min(v.seeds_planned + a.design.first, a.design.max_seeds);
      out[v.name] = n;
      most = std::max(most, n);
    }
  }
  for (const auto& v : a.variants) {
    if (v.is_baseline && most > v.seeds_planned) {
      out[v.name] = most;
    }
  }
  return out;
}

Analysis run_until_decided(std::vector<int64_t>& n, const StudyAt& analyze_at,
                           const std::function<size_t(const std::string&)>& arm_of) {
  Analysis a = analyze_at(n);
  for (auto more = next_round(a); !more.empty(); more = next_round(a)) {
    for (const auto& [name, seeds] : more) {
      n[arm_of(name)] = std::max(n[arm_of(name)], seeds);
    }
    a = analyze_at(n);
  }
  return a;
}

}  // namespace sweep
