// What the store's two files (store.cpp, ingest.cpp) share: SQLite errors as sweep's, and the
// time it stamps. Internal to the store module, the only one that includes SQLite.
#pragma once
#include <SQLiteCpp/SQLiteCpp.h>

#include <chrono>
#include <string>

#include "util/error.h"

namespace sweep::store_detail {

// A database error in one line naming the file; a full disk, a read-only folder or an I/O error
// exits io_error (nothing is lost: the transaction rolled back, the runs resume).
Error db_error(const std::string& path, const SQLite::Exception& e);

inline double now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

}  // namespace sweep::store_detail
