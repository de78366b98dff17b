# The library's layers, each an object library compiled once with hidden
# visibility and linked into both libattnprof.so (the product; exports only
# what the public headers declare with ATTN_API / PROF_API) and
# libattnprof_static.a (for the test kit, the tests and the benches).
#
# A layer sees include/ and, of src/, only the folders it may use: its
# include root is a folder of links, one per allowed layer folder, under
# <build>/layers/<target>, so that `#include "prof/..."` from a layer that
# may not use the profiler fails to compile. docs/architecture.md has the
# map; scripts/check_layers.sh checks the same rules on the sources.

# Links a layer's object library into both libraries. Its usage
# requirements (external libraries) go with it.
function(attnprof_internal_objects target)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON
                        C_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C>:${ATTNPROF_WARNINGS}>)
  target_link_libraries(attnprof PRIVATE ${target})
  target_link_libraries(attnprof_static PUBLIC ${target})
endfunction()

# attnprof_layer_view(target FOLDER...): target sees include/ and these src/
# folders (core, attn, prof, measure, cp, cli, testing), nothing else of src/.
function(attnprof_layer_view target)
  set(root ${PROJECT_BINARY_DIR}/layers/${target})
  file(REMOVE_RECURSE ${root})
  file(MAKE_DIRECTORY ${root})
  foreach(folder ${ARGN})
    if(NOT IS_DIRECTORY ${PROJECT_SOURCE_DIR}/src/${folder})
      message(FATAL_ERROR "attnprof_layer_view(${target}): no src/${folder}")
    endif()
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${folder} ${root}/${folder} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/include ${root})
endfunction()

# attnprof_layer(target SEES folder...): one layer of the library.
function(attnprof_layer target)
  cmake_parse_arguments(L "" "" "SEES" ${ARGN})
  attnprof_layer_view(${target} ${L_SEES})
  attnprof_internal_objects(${target})
endfunction()
