#include "util/build_info.h"

#include "code_version.h"  // generated into the build tree

namespace sweep {

const char* code_commit() { return SWEEP_CODE_COMMIT; }

}  // namespace sweep
