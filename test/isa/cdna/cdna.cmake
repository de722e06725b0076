# CDNA (gfx942, gfx950) part of test/isa. The compiler is clang-21 inside the
# Debian sid root GLUKIT_SID_ROOT (scripts/setup-amd-toolchain.sh), run through
# chroot (CI runs as root). Tests:
#   isa.cdna.stage                 copy include/ and these sources into the root
#   isa.cdna.compile.<arch>        every variant for fp16/row-major B and bf16/col_major B,
#                                  V4 also for bf16/row and fp16/col, and the gated
#                                  projection (every variant for bf16/stacked and
#                                  fp16/interleaved W, V1 and V4 for the other two), and
#                                  the gated backward (V4 and V2, SwiGlu and GeGlu,
#                                  bf16/stacked and fp16/interleaved P), addmm_glu's
#                                  backward (V4 and V2, fp16/col and bf16/row B, and the
#                                  default addmm_glu_backward<GluGate> for fp16), the gated
#                                  projection's backward (V4 and V2, SwiGlu and GeGlu,
#                                  bf16/stacked and fp16/interleaved W, and the default
#                                  gated_projection_backward<SwiGlu> for bf16), and
#                                  the scaled (fp8) forms in the chip's e4m3 encoding
#                                  (V1, V2, V4 gated bf16/stacked, V4 fp16/interleaved, with
#                                  row maxima, addmm_glu fp16 and bf16, and the defaults
#                                  gated_projection<SwiGlu> and addmm_glu (fp8 args) for bf16),
#                                  through each bound policy's launcher, device code
#                                  only, -O3 -S (test/isa/cdna/variants.hip)
#   isa.cdna.check.<arch>          check_cdna_isa.py on that assembly (docs/cdna.md)
#   isa.cdna.fails.<check>.<arch>  the same checks against a wrong expectation must fail
#   isa.cdna.launcher.<arch>       full hip-clang compile (host launcher + device code
#                                  + device link, so no undefined device-library symbol),
#                                  with the public AddmmGlu<P>::run and the default launcher
#   isa.cdna.header.<name>         each arch/cdna, kernels/cdna and kernels/plans/cdna header on its own
#   isa.cdna.lane_model            host: plan index math x hardware lane semantics
#                                  (addmm_glu tiles and problems, whole gated projections,
#                                  whole gated, addmm_glu and gated projection backwards
#                                  against the fp64 references)
set(_cdna_dir ${CMAKE_CURRENT_LIST_DIR})

# The lane model needs only a host compiler.
add_executable(glukit_isa_cdna_lane_model ${_cdna_dir}/lane_model.cpp)
target_link_libraries(glukit_isa_cdna_lane_model PRIVATE glukit::glukit Catch2::Catch2)
add_test(NAME isa.cdna.lane_model COMMAND glukit_isa_cdna_lane_model)
set_tests_properties(isa.cdna.lane_model PROPERTIES LABELS "isa;cdna")

if(NOT GLUKIT_HAVE_HIP)
  message(STATUS "glukit: test/isa CDNA compile checks skipped (no clang-21 sid root)")
  return()
endif()

find_program(GLUKIT_CHROOT chroot PATHS /usr/sbin /sbin REQUIRED)
find_package(Python3 COMPONENTS Interpreter QUIET)

string(MD5 _cdna_hash "${CMAKE_BINARY_DIR}")
string(SUBSTRING "${_cdna_hash}" 0 12 _cdna_hash)
set(_cdna_root "${GLUKIT_SID_ROOT}")
set(_cdna_in_root "/tmp/glukit-${_cdna_hash}")  # path seen inside the root
set(_cdna_stage "${_cdna_root}${_cdna_in_root}")           # the same folder seen from the host
set(_cdna_clang ${GLUKIT_CHROOT} ${_cdna_root} clang++-21)
set(_cdna_hip_flags -x hip -nogpulib -std=c++20 -I${_cdna_in_root}/include -Wall -Wextra)
set(_cdna_labels "isa;cdna")

# Header self-containment: one translation unit per header, including it twice.
file(GLOB _cdna_headers CONFIGURE_DEPENDS
     ${PROJECT_SOURCE_DIR}/include/glukit/arch/cdna/*.hpp
     ${PROJECT_SOURCE_DIR}/include/glukit/kernels/cdna/*.hpp
     ${PROJECT_SOURCE_DIR}/include/glukit/kernels/plans/cdna/*.hpp)
set(_cdna_generated ${CMAKE_CURRENT_BINARY_DIR}/cdna-selfcontained)
file(REMOVE_RECURSE ${_cdna_generated})
set(_cdna_header_units)
foreach(h ${_cdna_headers})
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR}/include ${h})
  string(REGEX REPLACE "[/.]" "_" unit ${rel})
  file(WRITE ${_cdna_generated}/${unit}.hip "#include \"${rel}\"\n#include \"${rel}\"  // include guard\n")
  list(APPEND _cdna_header_units ${unit}:${rel})
endforeach()

add_test(NAME isa.cdna.stage
         COMMAND ${CMAKE_COMMAND} -DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/include -DTEST_DIR=${_cdna_dir}
                 -DGENERATED_DIR=${_cdna_generated} -DDST=${_cdna_stage} -P ${_cdna_dir}/stage.cmake)
set_tests_properties(isa.cdna.stage PROPERTIES FIXTURES_SETUP glukit_cdna_stage LABELS "${_cdna_labels}")

if(Python3_Interpreter_FOUND)
  set(_cdna_checker ${Python3_EXECUTABLE} ${_cdna_dir}/check_cdna_isa.py)
  set(_cdna_asm_dir ${_cdna_stage}/out)
else()  # the root's python3 (a dependency of clang-21 there)
  set(_cdna_checker ${GLUKIT_CHROOT} ${_cdna_root} python3 ${_cdna_in_root}/src/check_cdna_isa.py)
  set(_cdna_asm_dir ${_cdna_in_root}/out)
endif()

# NAME/ELEMENT/LAYOUT=VARIANT: the kernels variants.hip instantiates.
set(_cdna_kernels --kernel V1RegisterStaged/fp16/row=v1 --kernel V2DirectToLds/fp16/row=v2
             --kernel V3DeepPipelinePersistent/fp16/row=v3 --kernel V4FusedEpilogue/fp16/row=v4
             --kernel V4SwiGlu/fp16/row=v4-op --kernel V4BiasOnly/fp16/row=v4-op
             --kernel V1RegisterStaged/bf16/col=v1 --kernel V2DirectToLds/bf16/col=v2
             --kernel V3DeepPipelinePersistent/bf16/col=v3 --kernel V4FusedEpilogue/bf16/col=v4
             --kernel V4FusedEpilogue/bf16/row=v4 --kernel V4FusedEpilogue/fp16/col=v4
             # the gated projection (GatedProblem<T, GateLayout>)
             --kernel V1RegisterStaged/bf16/stacked=v1 --kernel V2DirectToLds/bf16/stacked=v2
             --kernel V3DeepPipelinePersistent/bf16/stacked=v3 --kernel V4FusedEpilogue/bf16/stacked=v4
             --kernel V1RegisterStaged/fp16/interleaved=v1 --kernel V2DirectToLds/fp16/interleaved=v2
             --kernel V3DeepPipelinePersistent/fp16/interleaved=v3 --kernel V4FusedEpilogue/fp16/interleaved=v4
             --kernel V1RegisterStaged/bf16/interleaved=v1 --kernel V4FusedEpilogue/bf16/interleaved=v4
             --kernel V1RegisterStaged/fp16/stacked=v1 --kernel V4FusedEpilogue/fp16/stacked=v4
             # the gated backward (GatedBackwardProblem<T, GateLayout>)
             --kernel V4SwiGluBackward/bf16/bwd-stacked=v4-op --kernel V4SwiGluBackward/fp16/bwd-interleaved=v4-op
             --kernel V4GeGluBackward/bf16/bwd-stacked=v4-op --kernel V4GeGluBackward/fp16/bwd-interleaved=v4-op
             --kernel V2SwiGluBackward/bf16/bwd-stacked=v2 --kernel V2GeGluBackward/fp16/bwd-interleaved=v2
             # addmm_glu's backward (AddmmGluBackwardProblem<T, Layout>), GluGate: V4's fma is dX's
             --kernel V4GluBackward/fp16/xbwd-col=v4 --kernel V4GluBackward/bf16/xbwd-row=v4
             --kernel V2GluBackward/fp16/xbwd-col=v2 --kernel V2GluBackward/bf16/xbwd-row=v2
             # ... with the bias gradient's column sums (AddmmGluBackwardProblem<T, Layout, true>)
             --kernel V4GluBackward/fp16/xbwd-col-sum=v4 --kernel V4GluBackward/bf16/xbwd-row-sum=v4
             # the default addmm_glu_backward<GluGate> (V4FusedEpilogue<chip> itself: it runs GluGate)
             --kernel V4FusedEpilogue/fp16/xbwd-col=v4 --kernel V4FusedEpilogue/fp16/xbwd-row=v4
             --kernel V4FusedEpilogue/fp16/xbwd-col-sum=v4 --kernel V4FusedEpilogue/fp16/xbwd-row-sum=v4
             # the gated projection's backward (GatedProjectionBackwardProblem<T, GateLayout>)
             --kernel V4SwiGluBackward/bf16/pbwd-stacked=v4-op --kernel V4SwiGluBackward/fp16/pbwd-interleaved=v4-op
             --kernel V4GeGluBackward/bf16/pbwd-stacked=v4-op --kernel V4GeGluBackward/fp16/pbwd-interleaved=v4-op
             --kernel V2SwiGluBackward/bf16/pbwd-stacked=v2 --kernel V2GeGluBackward/fp16/pbwd-interleaved=v2
             # the default gated_projection_backward<SwiGlu> (WithEpilogue<V4FusedEpilogue<chip>, SwiGlu>)
             --kernel WithEpilogue/bf16/pbwd-stacked=v4-op --kernel WithEpilogue/bf16/pbwd-interleaved=v4-op
             # broadcast vectors and row maxima (test/common/compositions.hpp)
             --kernel V4FusedEpilogue/bf16/scaled-col=v4 --kernel V4FusedEpilogue/bf16/scaled-stacked=v4
             # the scaled (fp8) forms, the chip's e4m3 encoding (Scaled<Problem, RowMaxOut, F8>)
             --kernel V1RegisterStaged/bf16/fp8-stacked=v1 --kernel V2DirectToLds/bf16/fp8-stacked=v2
             --kernel V4Scaled/bf16/fp8-stacked=v4 --kernel V4Scaled/fp16/fp8-interleaved=v4
             --kernel V4Scaled/bf16/fp8-stacked-max=v4 --kernel V4Scaled/fp16/fp8-col=v4 --kernel V4Scaled/bf16/fp8-col=v4
             # the default gated_projection<SwiGlu>(fp8 args) (WithEpilogue<V4FusedEpilogue<chip>, SwiGlu>)
             --kernel WithEpilogue/bf16/fp8-stacked=v4-op --kernel WithEpilogue/bf16/fp8-interleaved=v4-op
             --kernel WithEpilogue/bf16/fp8-stacked-max=v4-op
             --kernel V2Grouped/bf16/grouped-stacked=v2 --kernel V2Grouped/bf16/grouped-interleaved=v2
             --kernel V4Grouped/bf16/grouped-stacked=v4 --kernel V4Grouped/fp16/grouped-interleaved=v4
             --kernel V4GroupedDown/bf16/col=v4-op --kernel V4GroupedDown/bf16/row=v4-op
             --kernel V4GroupedFp8/bf16/grouped-fp8-stacked=v4-op --kernel V4GroupedFp8/bf16/grouped-fp8-interleaved=v4-op
             --kernel V4GroupedFp8/bf16/grouped-fp8-stacked-max=v4-op --kernel V4GroupedDownFp8/bf16/grouped-fp8-col=v4-op
             # V4 with GluGate under that name (addmm_glu<WithEpilogue<V4, GluGate>>(fp8 args)), the
             # gated defaults' reference; the default addmm_glu(fp8 args) runs V4FusedEpilogue itself
             --kernel WithEpilogue/bf16/fp8-col=v4)
set(_cdna_budget_gfx942 65536)
set(_cdna_budget_gfx950 163840)

foreach(arch gfx942 gfx950)
  add_test(NAME isa.cdna.compile.${arch}
           COMMAND ${_cdna_clang} ${_cdna_hip_flags} --offload-arch=${arch} --cuda-device-only -O3 -S
                   -DGLUKIT_ISA_ARCH=${arch} -o ${_cdna_in_root}/out/variants-${arch}.s
                   ${_cdna_in_root}/src/variants.hip)
  set_tests_properties(isa.cdna.compile.${arch} PROPERTIES
                       FIXTURES_REQUIRED glukit_cdna_stage FIXTURES_SETUP glukit_cdna_${arch}
                       LABELS "${_cdna_labels}")

  set(_cdna_asm ${_cdna_asm_dir}/variants-${arch}.s)
  add_test(NAME isa.cdna.check.${arch}
           COMMAND ${_cdna_checker} --asm ${_cdna_asm} --arch ${arch} --lds-budget ${_cdna_budget_${arch}} ${_cdna_kernels}
                   --report ${CMAKE_CURRENT_BINARY_DIR}/cdna-isa-${arch}.txt)
  set_tests_properties(isa.cdna.check.${arch} PROPERTIES FIXTURES_REQUIRED glukit_cdna_${arch}
                       LABELS "${_cdna_labels}")

  # Each check shown able to fail: the real kernels against a wrong expectation.
  set(_cdna_b ${_cdna_budget_${arch}})
  set(_cdna_fails
      "vmcnt|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V2DirectToLds=v3"
      "dma|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V1RegisterStaged=v2"
      "setprio|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V1RegisterStaged=v2"
      "loop|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V1RegisterStaged=v3"
      "fma|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4BiasOnly=v4"
      "lds|--arch,${arch},--lds-budget,32768,--kernel,V3DeepPipelinePersistent=v3"
      # the problem checks: bf16 code judged as fp16, col_major B as row-major and back
      "mfma-bf16|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/bf16/col=v4/fp16/col"
      "cvt|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/fp16/row=v4/bf16/row"
      "bread|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/bf16/col=v4/bf16/row"
      "bread-row|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/bf16/row=v4/bf16/col"
      # addmm_glu kernels (they read Y) judged as the gated projection; a gated kernel as bf16
      "noy|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/bf16/col=v4/bf16/stacked"
      "noy-v1|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V1RegisterStaged/bf16/col=v1/bf16/interleaved"
      "mfma-gated|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/fp16/interleaved=v4/bf16/interleaved"
      # an addmm_glu and a gated projection kernel judged as the gated backward; a backward as row-major B
      "dgated|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/fp16/row=v4-op/fp16/bwd-stacked"
      "dgated-gated|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/bf16/stacked=v4/bf16/bwd-stacked"
      "bread-bwd|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4SwiGluBackward/bf16/bwd-stacked=v4-op/bf16/col"
      # an addmm_glu kernel and a gated backward judged as addmm_glu's backward; its bf16/row as col_major B
      "xbackward|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/fp16/row=v4/fp16/xbwd-row"
      "xbackward-dgated|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4SwiGluBackward/bf16/bwd-stacked=v4-op/bf16/xbwd-row"
      "bread-xbwd|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4GluBackward/bf16/xbwd-row=v4/bf16/xbwd-col"
      # the gated projection, the gated backward and addmm_glu's backward judged as the gated
      # projection's backward; it as the gated backward (one store stream, no H)
      "pbackward|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/bf16/stacked=v4/bf16/pbwd-stacked"
      "pbackward-dgated|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4SwiGluBackward/bf16/bwd-stacked=v4-op/bf16/pbwd-stacked"
      "pbackward-xbwd|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4GluBackward/fp16/xbwd-col=v4/fp16/pbwd-stacked"
      "dgated-pbwd|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4SwiGluBackward/bf16/pbwd-stacked=v4-op/bf16/bwd-stacked"
      # the reductions: a kernel without them judged as one with them, and back
      "colsum|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4GluBackward/fp16/xbwd-col=v4/fp16/xbwd-col-sum"
      "colsum-sum|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4GluBackward/fp16/xbwd-col-sum=v4/fp16/xbwd-col"
      "rowmax|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/bf16/col=v4/bf16/scaled-col"
      "rowmax-scaled|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/bf16/scaled-stacked=v4/bf16/stacked"
      # an fp8 kernel judged as its 16-bit problem and back (the MFMA's operand type); the row
      # maxima judged absent
      "mfma-fp8|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4Scaled/bf16/fp8-stacked=v4/bf16/stacked"
      "mfma-fp8-16|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4FusedEpilogue/bf16/stacked=v4/bf16/fp8-stacked"
      "rowmax-fp8|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4Scaled/bf16/fp8-stacked-max=v4/bf16/fp8-stacked"
      # the experts' e4m3 gated projection judged as the 16-bit one, and without its row maxima
      "mfma-grouped-fp8|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4GroupedFp8/bf16/grouped-fp8-stacked=v4-op/bf16/grouped-stacked"
      "rowmax-grouped-fp8|--arch,${arch},--lds-budget,${_cdna_b},--kernel,V4GroupedFp8/bf16/grouped-fp8-stacked-max=v4-op/bf16/grouped-fp8-stacked")
  if(arch STREQUAL "gfx942")  # gfx942 code judged as gfx950: wrong MFMA, 4-byte copies
    list(APPEND _cdna_fails "mfma|--arch,gfx950,--lds-budget,65536,--kernel,V4FusedEpilogue/fp16/row=v4"
                       "dma16|--arch,gfx950,--lds-budget,65536,--kernel,V4FusedEpilogue/fp16/row=v4")
  endif()
  foreach(f ${_cdna_fails})
    string(REPLACE "|" ";" f "${f}")
    list(GET f 0 test)
    list(GET f 1 f)
    string(REPLACE "," ";" f "${f}")
    string(REGEX REPLACE "-.*" "" check "${test}")  # bread-row, noy-v1: second cases
    add_test(NAME isa.cdna.fails.${test}.${arch}
             COMMAND ${_cdna_checker} --asm ${_cdna_asm} ${f} --expect-fail ${check})
    set_tests_properties(isa.cdna.fails.${test}.${arch} PROPERTIES
                         FIXTURES_REQUIRED glukit_cdna_${arch} LABELS "${_cdna_labels}")
  endforeach()

  add_test(NAME isa.cdna.launcher.${arch}
           COMMAND ${_cdna_clang} ${_cdna_hip_flags} --offload-arch=${arch} -O1 -c -DGLUKIT_ISA_ARCH=${arch}
                   -DGLUKIT_ISA_LAUNCHER
                   -o ${_cdna_in_root}/out/launcher-${arch}.o ${_cdna_in_root}/src/variants.hip)
  set_tests_properties(isa.cdna.launcher.${arch} PROPERTIES FIXTURES_REQUIRED glukit_cdna_stage
                       LABELS "${_cdna_labels}")
endforeach()

foreach(u ${_cdna_header_units})
  string(REPLACE ":" ";" u "${u}")
  list(GET u 0 unit)
  list(GET u 1 rel)
  add_test(NAME isa.cdna.header.${unit}
           COMMAND ${_cdna_clang} ${_cdna_hip_flags} --offload-arch=gfx942 --offload-arch=gfx950 -fsyntax-only
                   -Werror ${_cdna_in_root}/selfcontained/${unit}.hip)
  set_tests_properties(isa.cdna.header.${unit} PROPERTIES FIXTURES_REQUIRED glukit_cdna_stage
                       LABELS "${_cdna_labels}")
endforeach()
# The plan headers are also part of every host build (kernels/policy_check.hpp).
foreach(rel glukit/kernels/plans/cdna/geometry.hpp glukit/kernels/plans/cdna/plan_tile.hpp glukit/kernels/plans/cdna/plan.hpp
            glukit/kernels/plans/cdna/plan_gated.hpp glukit/kernels/plans/cdna/plan_backward.hpp glukit/kernels/plans/cdna/plan_check.hpp
            glukit/kernels/plans/cdna/plan_validate.hpp glukit/kernels/cdna/params.hpp)
  string(REGEX REPLACE "[/.]" "_" unit ${rel})
  add_test(NAME isa.cdna.header.host.${unit}
           COMMAND ${_cdna_clang} -x c++ -std=c++20 -I${_cdna_in_root}/include -Wall -Wextra -Werror -fsyntax-only
                   ${_cdna_in_root}/selfcontained/${unit}.hip)
  set_tests_properties(isa.cdna.header.host.${unit} PROPERTIES FIXTURES_REQUIRED glukit_cdna_stage
                       LABELS "${_cdna_labels}")
endforeach()
