# Attaches the CUDA half to the library once cuda.cmake found a toolkit. CUDA
# runtime is linked statically so the library loads on machines without it;
# CUPTI and cuDNN are opened at run time (dlopen) so that a missing one
# removes one feature with a message instead of the whole library.
if(ATTNPROF_HAVE_CUDA)
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  target_compile_definitions(attnprof_objects PUBLIC ATTNPROF_HAVE_CUDA=1)
  target_compile_definitions(attnprof PUBLIC ATTNPROF_HAVE_CUDA=1)
  target_compile_definitions(attnprof_objects PRIVATE
    ATTNPROF_CUDA_LIBDIR="${CUDAToolkit_LIBRARY_DIR}")
  target_include_directories(attnprof_objects PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(attnprof_objects PRIVATE CUDA::cudart_static ${CMAKE_DL_LIBS})
  if(ATTNPROF_HAVE_CUBLAS)
    target_compile_definitions(attnprof_objects PRIVATE ATTNPROF_HAVE_CUBLAS=1)
    target_link_libraries(attnprof_objects PRIVATE CUDA::cublas)
  endif()
  if(ATTNPROF_HAVE_CUPTI)
    target_compile_definitions(attnprof_objects PRIVATE ATTNPROF_HAVE_CUPTI=1)
  endif()
  if(ATTNPROF_HAVE_CUDNN)
    target_compile_definitions(attnprof_objects PRIVATE ATTNPROF_HAVE_CUDNN=1)
    target_include_directories(attnprof_objects PRIVATE ${CUDNN_INCLUDE_DIR})
  endif()
  # nvcc: line info for profilers, resource report with -DATTNPROF_PTXAS_VERBOSE=ON.
  option(ATTNPROF_PTXAS_VERBOSE "Print registers/smem/spills of every kernel" OFF)
  target_compile_options(attnprof_objects PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${ATTNPROF_PTXAS_VERBOSE}>>:-Xptxas=-v>)
endif()
