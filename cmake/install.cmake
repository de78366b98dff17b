# The install tree: the library, the command (with an RPATH relative to
# itself, so a moved prefix still runs), the trace helpers, the headers, a
# relocatable attnprof.pc and a CMake package exporting attnprof::attnprof.
include(CMakePackageConfigHelpers)
add_library(attnprof::attnprof ALIAS attnprof)

# Paths between install folders, relative, so nothing names the prefix.
file(RELATIVE_PATH ATTNPROF_BIN_TO_LIB "/p/${CMAKE_INSTALL_BINDIR}" "/p/${CMAKE_INSTALL_LIBDIR}")
file(RELATIVE_PATH ATTNPROF_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
set_target_properties(attnprof_cli PROPERTIES INSTALL_RPATH "$ORIGIN/${ATTNPROF_BIN_TO_LIB}")
if(ATTNPROF_HAVE_CUDA)
  # libcudart is linked dynamically: find the toolkit's when the loader does not.
  set_target_properties(attnprof PROPERTIES INSTALL_RPATH "${CUDAToolkit_LIBRARY_DIR}")
  # The command links the library statically (src/cli), and so libcudart itself.
  set_target_properties(attnprof_cli PROPERTIES
                        INSTALL_RPATH "$ORIGIN/${ATTNPROF_BIN_TO_LIB};${CUDAToolkit_LIBRARY_DIR}")
endif()

install(TARGETS attnprof EXPORT attnprofTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS attnprof_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The test kit's headers (testing.h, device.h) are not the product's API.
install(DIRECTORY include/attnprof DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        PATTERN testing.h EXCLUDE PATTERN device.h EXCLUDE)

set(ATTNPROF_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attnprof)
install(EXPORT attnprofTargets NAMESPACE attnprof:: DESTINATION ${ATTNPROF_CMAKE_DIR})
configure_package_config_file(cmake/attnprofConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/attnprofConfig.cmake INSTALL_DESTINATION ${ATTNPROF_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/attnprofConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/attnprofConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/attnprofConfigVersion.cmake
        DESTINATION ${ATTNPROF_CMAKE_DIR})

# pkg-config: what a static link would also need (the shared one needs none).
set(ATTNPROF_PC_REQUIRES_PRIVATE "openblas yajl zlib")
set(ATTNPROF_PC_LIBS_PRIVATE "${OpenMP_C_FLAGS} -lpthread -lm")
if(ATTNPROF_HAVE_CUDA)
  string(APPEND ATTNPROF_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -ldl")
endif()
configure_file(cmake/attnprof.pc.in attnprof.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/attnprof.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
