# ctest package.install: installs the glukit component into PREFIX (fresh) and
# checks that the package files and every public header arrived.
# cmake -DPREFIX=... -DBUILD_DIR=... -DSOURCE_DIR=... -DCMAKEDIR=... -DINCLUDEDIR=...
#       [-DCONSUMER_BUILD_DIR=...] -P this
foreach(v PREFIX BUILD_DIR SOURCE_DIR CMAKEDIR INCLUDEDIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "glukitInstallTest: ${v} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE "${PREFIX}")
if(DEFINED CONSUMER_BUILD_DIR)
  file(REMOVE_RECURSE "${CONSUMER_BUILD_DIR}")  # the consumer test configures from scratch
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                        --component glukit
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()

foreach(f glukitConfig.cmake glukitConfigVersion.cmake glukitTargets.cmake)
  if(NOT EXISTS "${PREFIX}/${CMAKEDIR}/${f}")
    message(FATAL_ERROR "missing after install: ${PREFIX}/${CMAKEDIR}/${f}")
  endif()
endforeach()

file(GLOB_RECURSE headers RELATIVE "${SOURCE_DIR}/include" "${SOURCE_DIR}/include/glukit/*.hpp")
list(LENGTH headers n)
if(n EQUAL 0)
  message(FATAL_ERROR "no headers found under ${SOURCE_DIR}/include")
endif()
foreach(h IN LISTS headers)
  if(NOT EXISTS "${PREFIX}/${INCLUDEDIR}/${h}")
    message(FATAL_ERROR "missing after install: ${PREFIX}/${INCLUDEDIR}/${h}")
  endif()
endforeach()
message(STATUS "glukit installed into ${PREFIX}: ${n} headers + package files in ${CMAKEDIR}")
