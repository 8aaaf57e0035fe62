# The installable SDK: `cmake --install <build> --prefix P` gives
#   P/include/basalt/{*.h,basalt.hpp,sdk/*.hpp,blocks/*.hpp}  ABI headers, the C++ wrapper, C++ SDK, GGUF blocks
#   P/lib/libbasalt.so.1 (+ .so link), libbasalt_blocks.a, P/bin/basalt
#   P/lib/basalt/plugins/basalt-*.so                   built-in plugins, found relative to libbasalt
#   P/lib/cmake/Basalt/                                find_package(Basalt): Basalt::basalt, ::cpp, ::abi, ::sdk, ::blocks
#                                                      and basalt_add_plugin() (BasaltPlugin.cmake)
#   P/lib/pkgconfig/basalt.pc                          pkg-config (relocatable: paths from ${pcfiledir})
#   P/lib/python3/dist-packages/basalt/                the ctypes package (bindings/python)
# Everything is relative to P, so an installed tree can be moved.
include(CMakePackageConfigHelpers)

set(BASALT_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Basalt)
install(EXPORT BasaltTargets NAMESPACE Basalt:: FILE BasaltTargets.cmake DESTINATION ${BASALT_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/BasaltConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/BasaltConfig.cmake
  INSTALL_DESTINATION ${BASALT_INSTALL_CMAKEDIR}
  PATH_VARS BASALT_INSTALL_PLUGINDIR CMAKE_INSTALL_INCLUDEDIR)
# 0.x releases are only compatible within their minor; from 1.0 on within the major.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(basalt_compat SameMinorVersion)
else()
  set(basalt_compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/BasaltConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${basalt_compat})
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/BasaltConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/BasaltConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/BasaltPlugin.cmake
  DESTINATION ${BASALT_INSTALL_CMAKEDIR})

# basalt.pc: the prefix is computed from the file's own folder, so the tree stays relocatable.
file(RELATIVE_PATH BASALT_PC_TO_PREFIX "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
configure_file(${PROJECT_SOURCE_DIR}/cmake/basalt.pc.in ${PROJECT_BINARY_DIR}/cmake/basalt.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/basalt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
