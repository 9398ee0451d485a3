# GPU buffers (gpu/): the CUDA runtime and NCCL.
#
#   -DRINGMEND_CUDA=AUTO  (default) built when the CUDA toolkit and nccl.h are found
#   -DRINGMEND_CUDA=ON    required: configuring fails without them
#   -DRINGMEND_CUDA=OFF   host buffers only
#
# The CUDA runtime is linked statically (it loads the driver when a program
# first touches a GPU, so libringmend starts on machines without one). NCCL
# is not linked: gpu/nccl_library.cpp opens libnccl.so.2 at the first call
# that needs it, so host-only programs never load its 200 MB, and a newer
# NCCL's calls (ncclCommShrink, 2.27) are used when the library has them.
# Sets RINGMEND_HAVE_CUDA and the target ringmend_cuda_deps.
set(RINGMEND_CUDA AUTO CACHE STRING "GPU buffers through CUDA and NCCL: AUTO, ON or OFF")
set_property(CACHE RINGMEND_CUDA PROPERTY STRINGS AUTO ON OFF)
set(RINGMEND_HAVE_CUDA OFF)
if(NOT RINGMEND_CUDA STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT} AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  find_path(RINGMEND_NCCL_INCLUDE_DIR nccl.h
    HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME PATH_SUFFIXES include)
  set(_nccl_version "")
  if(RINGMEND_NCCL_INCLUDE_DIR)
    file(STRINGS ${RINGMEND_NCCL_INCLUDE_DIR}/nccl.h _code REGEX "^#define NCCL_VERSION_CODE")
    string(REGEX MATCH "[0-9]+" _nccl_version "${_code}")
  endif()
  if(CUDAToolkit_FOUND AND TARGET CUDA::cudart_static AND _nccl_version AND _nccl_version GREATER_EQUAL 21800)
    set(RINGMEND_HAVE_CUDA ON)
    add_library(ringmend_cuda_deps INTERFACE)
    target_include_directories(ringmend_cuda_deps SYSTEM INTERFACE ${RINGMEND_NCCL_INCLUDE_DIR})
    target_link_libraries(ringmend_cuda_deps INTERFACE CUDA::cudart_static ${CMAKE_DL_LIBS})
    # The benchmark compares with NCCL's own allreduce, linked directly.
    find_library(RINGMEND_NCCL_LIBRARY_FILE nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME
      PATH_SUFFIXES lib lib64)
    message(STATUS "ringmend: GPU buffers on (CUDA ${CUDAToolkit_VERSION}, NCCL headers ${_nccl_version})")
  elseif(RINGMEND_CUDA STREQUAL "ON")
    message(FATAL_ERROR "RINGMEND_CUDA=ON, but the CUDA toolkit (found: ${CUDAToolkit_FOUND}) or nccl.h "
      "of NCCL 2.18 or newer (found: '${_nccl_version}') is missing; set CUDAToolkit_ROOT or NCCL_HOME")
  else()
    message(STATUS "ringmend: GPU buffers off (no CUDA toolkit with NCCL 2.18+ found)")
  endif()
endif()
