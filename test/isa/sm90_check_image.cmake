# ctest isa.sm90.image_marker: compiles two translation units with ptxas' resource
# report (-Xptxas -v) and checks the static shared memory of each addmm_glu_kernel entry:
#   - the default launcher for sm_90 (fp16 and bf16): every entry has the marker's size
#     (glukit::sm90::not_sm90a_marker_bytes, read from plan_image.hpp);
#   - WarpSpecializedTma for sm_90a: no entry declares static shared memory.
# cmake -DNVCC=... -DINCLUDE_DIR=... -DWORK_DIR=... -P this
foreach(v NVCC INCLUDE_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "sm90_check_image: ${v} is not set")
  endif()
endforeach()
file(STRINGS "${INCLUDE_DIR}/glukit/kernels/sm90/plan_image.hpp" marker_line
     REGEX "not_sm90a_marker_bytes = [0-9]+")
string(REGEX REPLACE ".*= ([0-9]+).*" "\\1" marker "${marker_line}")
if(NOT marker MATCHES "^[0-9]+$")
  message(FATAL_ERROR "cannot read not_sm90a_marker_bytes from plan_image.hpp")
endif()
file(MAKE_DIRECTORY "${WORK_DIR}")

# Returns, in out_var, "entry|smem" for each kernel entry ptxas compiled for `arch`.
function(compile_and_report out_var name arch body)
  set(src "${WORK_DIR}/${name}.cu")
  file(WRITE "${src}" "#include <glukit/glukit.hpp>\n${body}\n")
  execute_process(
    COMMAND "${NVCC}" -std=c++20 -O3 "-gencode=arch=compute_${arch},code=sm_${arch}" -Xptxas -v
            -I "${INCLUDE_DIR}" -c "${src}" -o "${WORK_DIR}/${name}.o"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nvcc failed for ${name} (sm_${arch}):\n${out}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  set(entries)
  set(current "")
  foreach(line IN LISTS lines)
    if(line MATCHES "Compiling entry function '([^']*addmm_glu_kernel[^']*)' for 'sm_${arch}'")
      set(current "${CMAKE_MATCH_1}")
    elseif(current AND line MATCHES "Used [0-9]+ registers")
      set(smem 0)
      if(line MATCHES ", ([0-9]+) bytes smem")
        set(smem "${CMAKE_MATCH_1}")
      endif()
      list(APPEND entries "${current}|${smem}")
      set(current "")
    endif()
  endforeach()
  if(NOT entries)
    message(FATAL_ERROR "no addmm_glu_kernel entry in ptxas' report for ${name} (sm_${arch}):\n${out}")
  endif()
  set(${out_var} "${entries}" PARENT_SCOPE)
endfunction()

compile_and_report(sm90 default_sm90 90
  "template glukit::Status glukit::addmm_glu(const glukit::AddmmGluArgsT<glukit::half_t>&, glukit::stream_t);
template glukit::Status glukit::addmm_glu(const glukit::AddmmGluArgsT<glukit::bfloat16_t>&, glukit::stream_t);")
list(LENGTH sm90 n90)
foreach(e IN LISTS sm90)
  string(REGEX REPLACE ".*\\|" "" smem "${e}")
  if(NOT smem EQUAL marker)
    message(FATAL_ERROR "sm_90 entry with ${smem} bytes of static shared memory, not the marker's ${marker}: ${e}")
  endif()
endforeach()
message(STATUS "sm_90: ${n90} kernel entries, each with the ${marker}-byte marker")

compile_and_report(sm90a ws_sm90a 90a
  "template glukit::Status glukit::addmm_glu<glukit::policy::WarpSpecializedTma<glukit::arch::sm90a>>(
    const glukit::AddmmGluArgsT<glukit::half_t>&, glukit::stream_t);")
list(LENGTH sm90a n90a)
foreach(e IN LISTS sm90a)
  string(REGEX REPLACE ".*\\|" "" smem "${e}")
  if(NOT smem EQUAL 0)
    message(FATAL_ERROR "sm_90a entry with ${smem} bytes of static shared memory (the launcher expects none): ${e}")
  endif()
endforeach()
message(STATUS "sm_90a: ${n90a} kernel entries, none with static shared memory")
