# CUDA helpers shared by glukit's own build and the installed package
# (glukitConfig.cmake includes this file):
#
#   glukit_cuda_enable_cxx20()      (macro) teaches CMake nvcc's -std=c++20 in the
#       calling directory when CUDA is enabled there and CMake does not know it: CMake
#       3.25 has no cuda_std_20 for nvcc (CUDA_STANDARD 20 is ignored, cuda_std_20 is an
#       unknown feature). Sets GLUKIT_CUDA_HAS_CXX20 to whether cuda_std_20 now works.
#   glukit_target_sm90a(<target>)   compiles <target>'s CUDA sources for sm_90a
#       (CUDA_ARCHITECTURES 90a: -gencode arch=compute_90a,code=[compute_90a,sm_90a]),
#       as C++20: the way glukit documents to build a target that launches sm90a kernels.
include_guard(DIRECTORY)

macro(glukit_cuda_enable_cxx20)
  set(GLUKIT_CUDA_HAS_CXX20 OFF)
  if(CMAKE_CUDA_COMPILER_LOADED)
    if(NOT "cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES
       AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA"
       AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    if("cuda_std_20" IN_LIST CMAKE_CUDA_COMPILE_FEATURES)
      set(GLUKIT_CUDA_HAS_CXX20 ON)
    endif()
  endif()
endmacro()

# A macro, so that the teaching lands in the caller's directory, where the target is
# generated (also when CUDA was enabled after find_package(glukit)).
macro(glukit_target_sm90a _glukit_target)
  if(NOT TARGET ${_glukit_target})
    message(FATAL_ERROR "glukit_target_sm90a: ${_glukit_target} is not a target")
  endif()
  if(NOT CMAKE_CUDA_COMPILER_LOADED)
    message(FATAL_ERROR "glukit_target_sm90a(${_glukit_target}): enable CUDA first "
                        "(project(... LANGUAGES CXX CUDA) or enable_language(CUDA))")
  endif()
  glukit_cuda_enable_cxx20()
  set_target_properties(${_glukit_target} PROPERTIES CUDA_ARCHITECTURES 90a)
  if(GLUKIT_CUDA_HAS_CXX20)
    target_compile_features(${_glukit_target} PRIVATE cuda_std_20)
  endif()
endmacro()
