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
# One variant's check: a translation unit instantiating `launcher<policy>` on
# its args type, compiled to PTX, then sm90_check_ptx.cmake with VARIANT = variant.
function(glukit_sm90_ptx_check variant launcher args_type policy element)
  set(src "${CMAKE_CURRENT_BINARY_DIR}/sm90_${variant}.cu")
  file(WRITE "${src}.in"
    "#include \"${CMAKE_CURRENT_SOURCE_DIR}/sm90_policies.hpp\"\n"
    "template glukit::Status glukit::${launcher}<${policy}>(\n"
    "    const glukit::${args_type}<${element}>&, glukit::stream_t);\n")
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
endfunction()

# The shipped policies, then the optional modes of sm90_policies.hpp; each for fp16 and
# (suffix _bf16) for bf16. One translation unit holds the kernels of both layouts of B
# (the launcher picks one per call), so each PTX shows B's MN-major and K-major wgmma.
set(_glukit_sm90_policies V1RegisterStaged V2DirectToLds V3DeepPipelinePersistent V4FusedEpilogue WarpSpecializedTma
    WarpSpecializedTma128x128 WarpSpecializedTma128x256 WarpSpecializedTmaPingpong128x128 WarpSpecializedTmaPingpong64x128
    WarpSpecializedTmaDecode16x128
    WarpSpecializedTmaPingpong WarpSpecializedTmaCluster)
set(_glukit_sm90_variants)
foreach(policy IN LISTS _glukit_sm90_policies)
  list(APPEND _glukit_sm90_variants ${policy} ${policy}_bf16)
endforeach()
foreach(variant IN LISTS _glukit_sm90_variants)
  string(REGEX REPLACE "_bf16$" "" base "${variant}")
  if(base MATCHES "^WarpSpecializedTma(Pingpong|Cluster)$")
    set(policy "glukit_isa::${base}")
  else()
    set(policy "glukit::policy::${base}<glukit::arch::sm90a>")
  endif()
  if(variant MATCHES "_bf16$")
    set(element "glukit::bfloat16_t")
  else()
    set(element "glukit::half_t")
  endif()
  glukit_sm90_ptx_check(${variant} addmm_glu AddmmGluArgsT "${policy}" "${element}")
endforeach()

# The gated projection: V1-V4 (with SwiGLU) and the GatedTma kernels through
# glukit::gated_projection<Policy>, fp16 and bf16; one translation unit holds both W
# orders. VARIANT Gated_<policy>[_bf16] (sm90_check_ptx.cmake checks the prefix Gated_).
set(_glukit_sm90_gated V1RegisterStaged V2DirectToLds V3DeepPipelinePersistent V4FusedEpilogue GatedTma128x256
    GatedTma128x128 GatedTmaPingpong128x128 GatedTmaPingpong64x128 GatedTmaDecode16x128 GatedTmaDecode16x256)
foreach(base IN LISTS _glukit_sm90_gated)
  foreach(element glukit::half_t glukit::bfloat16_t)
    set(variant "Gated_${base}")
    if(element STREQUAL "glukit::bfloat16_t")
      set(variant "${variant}_bf16")
    endif()
    if(base MATCHES "^V[1-4]")
      set(policy "glukit::policy::WithEpilogue<glukit::policy::${base}<glukit::arch::sm90a>, glukit::epilogue::SwiGlu>")
    else()
      set(policy "glukit::policy::${base}<glukit::arch::sm90a>")
    endif()
    glukit_sm90_ptx_check(${variant} gated_projection GatedProjectionArgsT "${policy}" "${element}")
  endforeach()
endforeach()

# The training kernels, fp16 and bf16 (VARIANT Backward_<launcher>[_bf16]): the gated
# backward (its default, ping-pong policy), addmm_glu's backward, the gated projection's
# backward and the experts' grouped gated backward (cooperative), each with its policy.
set(_glukit_sm90_backward
    "gated_backward|GatedBackwardArgsT|glukit::policy::GatedBackwardTmaPingpong128x128<glukit::arch::sm90a>"
    "addmm_glu_backward|AddmmGluBackwardArgsT|glukit::policy::AddmmGluBackwardTma128x128<glukit::arch::sm90a>"
    "gated_projection_backward|GatedProjectionBackwardArgsT|glukit::policy::GatedTma128x256<glukit::arch::sm90a>"
    "grouped_gated_backward|GroupedGatedBackwardArgsT|glukit::policy::GatedBackwardTma128x128<glukit::arch::sm90a>")
foreach(entry IN LISTS _glukit_sm90_backward)
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 launcher)
  list(GET parts 1 args_type)
  list(GET parts 2 policy)
  glukit_sm90_ptx_check(Backward_${launcher} ${launcher} ${args_type} "${policy}" glukit::half_t)
  glukit_sm90_ptx_check(Backward_${launcher}_bf16 ${launcher} ${args_type} "${policy}" glukit::bfloat16_t)
endforeach()

# The experts' grouped gated projection (VARIANT Grouped_<policy>[_bf16]) through
# glukit::grouped_gated_projection<Policy>: the multistage cp.async kernel over the grouped
# tile map, A's rows gathered (V2DirectToLds), or the warp-specialised TMA kernel on the
# routed rows the launch gathers first (GatedTma128x128, and GatedTmaPingpong64x128: 64-row
# tiles, whose fill of few-hundred-row experts is higher); one translation unit holds both W
# orders. The down projection on the warp-specialised kernel (VARIANT GroupedDown_<policy>), and
# the e4m3 gated and down projections on it (VARIANT GroupedFp8_<policy>: the e4m3 default's three tiles,
# GroupedFp8_Down_<policy>).
foreach(element glukit::half_t glukit::bfloat16_t)
  set(suffix "")
  if(element STREQUAL "glukit::bfloat16_t")
    set(suffix "_bf16")
  endif()
  foreach(base V2DirectToLds GatedTma128x128 GatedTmaPingpong64x128)
    glukit_sm90_ptx_check(Grouped_${base}${suffix} grouped_gated_projection GroupedGatedProjectionArgsT
      "glukit::policy::WithEpilogue<glukit::policy::${base}<glukit::arch::sm90a>, glukit::epilogue::SwiGlu>" "${element}")
  endforeach()
  set(fp8_tiles GatedTma128x128)
  if(suffix STREQUAL "_bf16")  # the e4m3 default's other two tiles (kernels/sm90/plan_default.hpp)
    list(APPEND fp8_tiles GatedTma128x256 GatedTmaPingpong128x128)
  endif()
  foreach(base ${fp8_tiles})
    glukit_sm90_ptx_check(GroupedFp8_${base}${suffix} grouped_gated_projection_fp8 GroupedGatedProjectionFp8ArgsT
      "glukit::policy::WithEpilogue<glukit::policy::${base}<glukit::arch::sm90a>, glukit::epilogue::SwiGlu>"
      "${element}")
  endforeach()
  glukit_sm90_ptx_check(GroupedFp8_Down_WarpSpecializedTma${suffix} grouped_down_projection_fp8
    GroupedDownProjectionFp8ArgsT
    "glukit::policy::WithEpilogue<glukit::policy::WarpSpecializedTma<glukit::arch::sm90a>, glukit::epilogue::BiasOnly>"
    "${element}")
  glukit_sm90_ptx_check(GroupedDown_WarpSpecializedTma${suffix} grouped_down_projection GroupedDownProjectionArgsT
    "glukit::policy::WithEpilogue<glukit::policy::WarpSpecializedTma<glukit::arch::sm90a>, glukit::epilogue::BiasOnly>"
    "${element}")
endforeach()

# The launcher's sm_90a check (kernels/sm90/plan_image.hpp) reads the kernel's static
# shared memory back from the runtime: ptxas must report the marker's size for every
# kernel entry compiled for sm_90 (the default launcher, both element types) and never
# for sm_90a (the default's 128 x 192 kernel, both layouts of B).
add_test(NAME isa.sm90.image_marker
  COMMAND ${CMAKE_COMMAND} -DNVCC=${CMAKE_CUDA_COMPILER} -DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/include
          -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/image_marker
          -P ${CMAKE_CURRENT_SOURCE_DIR}/sm90_check_image.cmake)
set_tests_properties(isa.sm90.image_marker PROPERTIES LABELS isa)
