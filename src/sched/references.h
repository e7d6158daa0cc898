// A sweep's reference models (`references:` in a sweep file), scored by the training core the way
// runs are: `sweep-core eval --json`, a process of its own (the front links no LibTorch).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/sweep_spec.h"
#include "store/store.h"

namespace sweep {

// The sweep's reference models that need a score, each scored on the baseline's test split the way
// runs are (`sweep eval`), before anything is written: a state dict that does not fit fails the
// command before hours of training, with nothing written. A score is kept while the file's content
// and the dataset stay the same. Returns the new scores, for the caller to record.
// `core`: the training core's executable, asked for only when a score is needed (it throws
// when there is none).
std::vector<ReferenceScore> score_references(const SweepSpec& spec, const std::string& db,
                                             const std::function<std::string()>& core);

}  // namespace sweep
