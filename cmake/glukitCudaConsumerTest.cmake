# ctest package.cuda_consumer: configures test/package/cuda_consumer (a .cu that
# launches glukit's default kernel; its CMakeLists.txt is README's snippet, checked
# here word for word) against the install prefix, builds it with nvcc, and runs it:
# it must exit 0 and print "glukit cuda consumer: ok" (no GPU: the launcher returned a
# clean non-ok Status; a GPU: the result matched the reference).
# cmake -DSOURCE_DIR=<consumer> -DBINARY_DIR=... -DPREFIX=... -DREADME=... -DCUDA_COMPILER=...
#       -DCXX_COMPILER=... -DGENERATOR=... [-DMAKE_PROGRAM=...] -P this
foreach(v SOURCE_DIR BINARY_DIR PREFIX README CUDA_COMPILER CXX_COMPILER GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "glukitCudaConsumerTest: ${v} is not set")
  endif()
endforeach()

# README's snippet (the ```cmake block after "and in the other project's CMakeLists.txt")
# is the consumer's CMakeLists.txt.
file(READ "${README}" readme)
file(READ "${SOURCE_DIR}/CMakeLists.txt" consumer_lists)
string(FIND "${readme}" "## Using glukit from another project" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README lacks the section \"Using glukit from another project\"")
endif()
string(SUBSTRING "${readme}" ${at} -1 section)
string(FIND "${section}" "```cmake\n" open)
if(open EQUAL -1)
  message(FATAL_ERROR "README's section \"Using glukit from another project\" has no ```cmake block")
endif()
math(EXPR open "${open} + 9")
string(SUBSTRING "${section}" ${open} -1 section)
string(FIND "${section}" "```" close)
string(SUBSTRING "${section}" 0 ${close} snippet)
if(NOT snippet STREQUAL consumer_lists)
  message(FATAL_ERROR "README's CMake snippet differs from ${SOURCE_DIR}/CMakeLists.txt:\n"
                      "--- README:\n${snippet}--- CMakeLists.txt:\n${consumer_lists}")
endif()
message(STATUS "README's snippet is ${SOURCE_DIR}/CMakeLists.txt")

file(REMOVE_RECURSE "${BINARY_DIR}")
set(make_program)
if(MAKE_PROGRAM)
  set(make_program "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G "${GENERATOR}" ${make_program}
          "-DCMAKE_PREFIX_PATH=${PREFIX}" "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}"
          "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" -DCMAKE_BUILD_TYPE=Release
          -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the CUDA consumer failed (${rc})")
endif()
# The package must be the one just installed.
file(STRINGS "${BINARY_DIR}/CMakeCache.txt" dir_line REGEX "^glukit_DIR:")
string(REGEX REPLACE "^glukit_DIR:[A-Z]+=" "" found "${dir_line}")
file(REAL_PATH "${PREFIX}" expected)
file(REAL_PATH "${found}" found)
string(FIND "${found}" "${expected}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "glukit was found in ${found}, not under ${expected}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BINARY_DIR}" --verbose
                RESULT_VARIABLE rc OUTPUT_VARIABLE build_out ERROR_VARIABLE build_out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the CUDA consumer failed (${rc}):\n${build_out}")
endif()
foreach(flag "-std=c++20" "arch=compute_90a,code=[compute_90a,sm_90a]")
  string(FIND "${build_out}" "${flag}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the consumer's nvcc command lacks ${flag}:\n${build_out}")
  endif()
endforeach()
message(STATUS "built with nvcc -std=c++20 for sm_90a")
execute_process(COMMAND "${BINARY_DIR}/app" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message(STATUS "app:\n${out}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "glukit cuda consumer: ok")
  message(FATAL_ERROR "the CUDA consumer failed (exit ${rc})")
endif()
