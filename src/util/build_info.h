// Which code this binary is: the git commit its sources came from, stamped at build time
// ("<12 hex>", "<12 hex>+dirty" when the sources differ from it, "unknown" outside a clone).
// Runs record it, so a result can always be traced to the code that trained it.
#pragma once

namespace sweep {

const char* code_commit();

}  // namespace sweep
