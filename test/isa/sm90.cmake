# sm90a compile and PTX checks (CI, no GPU): every variant compiles for sm_90a
# through the public launcher (one translation unit each, to PTX and to a cubin),
# and its PTX shows what the variant claims (sm90_check_ptx.cmake). The SASS
# (HGMMA, not HMMA) is checked on the device machine: cuobjdump is not part of
# the toolkit here (docs/perf-notes.md quotes it).
if(NOT GLUKIT_HAVE_CUDA)
  message(STATUS "glukit: sm90a ISA checks skipped (no nvcc)")
  return()
endif()
# The PTX is regenerated when any library header changes (not only the wrapper).
file(GLOB_RECURSE _glukit_sm90_headers CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/include/*.hpp")
# The shipped policies, then the optional modes of sm90_policies.hpp.
set(_glukit_sm90_policies V1RegisterStaged V2DirectToLds V3DeepPipelinePersistent V4FusedEpilogue WarpSpecializedTma
    WarpSpecializedTmaPingpong WarpSpecializedTmaCluster)
foreach(variant IN LISTS _glukit_sm90_policies)
  if(variant MATCHES "^WarpSpecializedTma(Pingpong|Cluster)$")
    set(policy "glukit_isa::${variant}")
  else()
    set(policy "glukit::policy::${variant}<glukit::arch::sm90a>")
  endif()
  set(src "${CMAKE_CURRENT_BINARY_DIR}/sm90_${variant}.cu")
  file(WRITE "${src}.in"
    "#include \"${CMAKE_CURRENT_SOURCE_DIR}/sm90_policies.hpp\"\n"
    "template glukit::Status glukit::addmm_glu<${policy}>(\n"
    "    const glukit::AddmmGluArgs&, glukit::stream_t);\n")
  configure_file("${src}.in" "${src}" COPYONLY)
  set(ptx "${CMAKE_CURRENT_BINARY_DIR}/sm90_${variant}.ptx")
  add_custom_command(OUTPUT "${ptx}"
    COMMAND ${CMAKE_CUDA_COMPILER} -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a
            -I${PROJECT_SOURCE_DIR}/include --ptx "${src}" -o "${ptx}"
    DEPENDS "${src}" "${CMAKE_CURRENT_SOURCE_DIR}/sm90_policies.hpp" ${_glukit_sm90_headers} VERBATIM)
  add_custom_target(isa_sm90_${variant} ALL DEPENDS "${ptx}")
  add_test(NAME isa.sm90.${variant}
    COMMAND ${CMAKE_COMMAND} -DPTX=${ptx} -DVARIANT=${variant} -P ${CMAKE_CURRENT_SOURCE_DIR}/sm90_check_ptx.cmake)
  set_tests_properties(isa.sm90.${variant} PROPERTIES LABELS isa)
endforeach()
