# cmake -P stage.cmake -DINCLUDE_DIR=... -DTEST_DIR=... -DGENERATED_DIR=... -DDST=...
# Copies the headers and the CDNA test sources (with test/common/compositions.hpp) into DST, a folder inside the
# sid root, so the root's clang-21 sees them; creates DST/out for its outputs.
foreach(var INCLUDE_DIR TEST_DIR GENERATED_DIR DST)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "stage.cmake: ${var} not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${DST}")
file(MAKE_DIRECTORY "${DST}/out")
file(COPY "${INCLUDE_DIR}/" DESTINATION "${DST}/include")
file(GLOB sources "${TEST_DIR}/*.hip" "${TEST_DIR}/*.py" "${TEST_DIR}/../../common/compositions.hpp")
file(COPY ${sources} DESTINATION "${DST}/src")
file(COPY "${GENERATED_DIR}/" DESTINATION "${DST}/selfcontained")
