# Attaches the CUDA half to the library once cuda.cmake found a toolkit. The
# CUDA runtime is linked dynamically (inside PyTorch the process then keeps
# one runtime of a version); cuBLAS, CUPTI and cuDNN are opened at run time
# (dlopen) by the first backend that needs them, so a missing one removes one
# feature with a message, and a command that needs none maps none.
if(ATTNPROF_HAVE_CUDA)
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  # Every layer, the command, the tests and the benches compile their CUDA
  # parts; an installed consumer learns it from the attnprof target.
  add_compile_definitions(ATTNPROF_HAVE_CUDA=1)
  target_compile_definitions(attnprof PUBLIC ATTNPROF_HAVE_CUDA=1)
  # Every later CUDA target (layers, tests, benches) shares that one runtime.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  set_target_properties(attnprof attnprof_static attnprof_objects PROPERTIES
                        CUDA_RUNTIME_LIBRARY Shared)
  # nvcc: line info for profilers, resource report with -DATTNPROF_PTXAS_VERBOSE=ON.
  option(ATTNPROF_PTXAS_VERBOSE "Print registers/smem/spills of every kernel" OFF)
endif()

# attnprof_cuda_layer(target): a layer that calls the CUDA runtime (headers,
# the shared libcudart, nvcc's options).
function(attnprof_cuda_layer target)
  target_include_directories(${target} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(${target} PRIVATE CUDA::cudart ${CMAKE_DL_LIBS})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${ATTNPROF_PTXAS_VERBOSE}>>:-Xptxas=-v>)
endfunction()

if(ATTNPROF_HAVE_CUDA)
  attnprof_cuda_layer(attnprof_objects)
  target_compile_definitions(attnprof_objects PRIVATE
    ATTNPROF_CUDA_LIBDIR="${CUDAToolkit_LIBRARY_DIR}")
  if(ATTNPROF_HAVE_CUBLAS)
    # Headers only: src/attn/cuda/baselines/blas_loader.c opens libcublas.
    target_compile_definitions(attnprof_objects PRIVATE ATTNPROF_HAVE_CUBLAS=1)
  endif()
  if(ATTNPROF_HAVE_CUPTI)
    target_compile_definitions(attnprof_objects PRIVATE ATTNPROF_HAVE_CUPTI=1)
  endif()
  if(ATTNPROF_HAVE_CUDNN)
    target_compile_definitions(attnprof_objects PRIVATE ATTNPROF_HAVE_CUDNN=1)
    target_include_directories(attnprof_objects PRIVATE ${CUDNN_INCLUDE_DIR})
  endif()
endif()
