# Detects the CUDA half (nvcc, cuBLAS, CUPTI, cuDNN) and says what it found.
# Everything here is optional: without it the CPU build is whole.
set(ATTNPROF_HAVE_CUDA OFF)
set(ATTNPROF_HAVE_CUBLAS OFF)
set(ATTNPROF_HAVE_CUPTI OFF)
set(ATTNPROF_HAVE_CUDNN OFF)
if(NOT ATTNPROF_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  find_package(CUDAToolkit QUIET)
  if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
    set(ATTNPROF_HAVE_CUDA ON)
    # sm_80 (runs on sm_80/86/89) and sm_90 machine code; PTX of sm_90 for newer.
    # Hopper-only kernels (wgmma, setmaxnreg) add their own sm_90a gencode.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
    endif()
    if(TARGET CUDA::cublas)
      set(ATTNPROF_HAVE_CUBLAS ON)
    endif()
    if(TARGET CUDA::cupti)
      set(ATTNPROF_HAVE_CUPTI ON)
    endif()
    find_path(CUDNN_INCLUDE_DIR cudnn_graph.h HINTS ${CUDAToolkit_INCLUDE_DIRS}
              PATH_SUFFIXES include)
    find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
      set(ATTNPROF_HAVE_CUDNN ON)
    endif()
  elseif(ATTNPROF_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ATTNPROF_CUDA=ON but no CUDA compiler/toolkit was found")
  endif()
endif()
message(STATUS "attnprof: CUDA ${ATTNPROF_HAVE_CUDA} (${CUDAToolkit_VERSION}), "
               "cuBLAS ${ATTNPROF_HAVE_CUBLAS}, CUPTI ${ATTNPROF_HAVE_CUPTI}, "
               "cuDNN ${ATTNPROF_HAVE_CUDNN}")
