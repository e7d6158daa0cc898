# Run at every build (cmake -P): writes OUT, a header naming the commit the sources come from,
# only when that changes, so an unchanged tree rebuilds nothing. "+dirty" when the files that
# make the binary (src/, kernels/, CMakeLists.txt, cmake/) differ from the commit; "unknown"
# outside a git clone.
execute_process(COMMAND git -C "${SRC}" rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
if(rc EQUAL 0 AND commit)
  execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=normal -- src kernels CMakeLists.txt cmake
                  OUTPUT_VARIABLE changes RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0 OR changes)
    string(APPEND commit "+dirty")
  endif()
else()
  set(commit "unknown")
endif()
file(WRITE "${OUT}.tmp" "// Generated at build time by cmake/code_version.cmake.\n#pragma once\n#define SWEEP_CODE_COMMIT \"${commit}\"\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
