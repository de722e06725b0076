# One compile test (see test/compile/CMakeLists.txt):
#   cmake -DCXX=<c++ compiler> -DINCLUDE_DIR=<dir> -DSOURCE=<file.cpp> -DEXPECT=fail|pass -P this
# EXPECT=fail: the compile must fail, its output must report a static assertion,
# and it must contain each fragment given in the source as
#   // expect-error: <fragment>
# EXPECT=pass: the compile must succeed.
foreach(v CXX INCLUDE_DIR SOURCE EXPECT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "glukitCompileTest: ${v} is not set")
  endif()
endforeach()

file(STRINGS "${SOURCE}" expect_lines REGEX "^// expect-error: ")
set(fragments)
foreach(line IN LISTS expect_lines)
  string(REGEX REPLACE "^// expect-error: " "" fragment "${line}")
  list(APPEND fragments "${fragment}")
endforeach()
if(EXPECT STREQUAL "fail" AND NOT fragments)
  message(FATAL_ERROR "${SOURCE}: a fail_ test needs at least one '// expect-error: ' line")
endif()

execute_process(
  COMMAND "${CXX}" -std=c++20 -fsyntax-only -fdiagnostics-color=never -I "${INCLUDE_DIR}" "${SOURCE}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)

if(EXPECT STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "expected ${SOURCE} to compile; it did not:\n${out}")
  endif()
  message(STATUS "compiles, as expected")
  return()
endif()

if(rc EQUAL 0)
  message(FATAL_ERROR "expected ${SOURCE} NOT to compile, but it compiled")
endif()
if(NOT out MATCHES "static assertion failed|static_assert")
  message(FATAL_ERROR "the compile failed, but not on a static_assert:\n${out}")
endif()
foreach(fragment IN LISTS fragments)
  string(FIND "${out}" "${fragment}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the compile failed, but its output lacks \"${fragment}\":\n${out}")
  endif()
  message(STATUS "fails with \"${fragment}\", as expected")
endforeach()
