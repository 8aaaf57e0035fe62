# basalt_add_plugin(<name> SOURCES <files...> [LIBRARIES <targets...>] [INSTALL_DESTINATION <dir>] [NO_INSTALL])
# Builds a loadable module `basalt-<name>.so` (target basalt-plugin-<name>) that sees only the ABI headers and
# the header-only SDK (Basalt::sdk); add Basalt::blocks to LIBRARIES for the GGUF block helpers. Plugins never
# link libbasalt (every undefined symbol must resolve at link time) and export only basalt_plugin_init (a
# version script; the ABI's one-export rule).
# The same file serves the Basalt tree and, installed as <prefix>/lib/cmake/Basalt/BasaltPlugin.cmake, third
# parties after find_package(Basalt):
#  - in the tree: built into the plugin folder beside libbasalt, installed to <prefix>/lib/basalt/plugins;
#  - out of tree: built into the current binary folder, installed to ${CMAKE_INSTALL_LIBDIR}/basalt/plugins of
#    the project's own prefix (or INSTALL_DESTINATION); load it with --plugin, BASALT_PLUGIN_PATH or by
#    installing into the same prefix as Basalt (then it is discovered like the built-in plugins).
include_guard(GLOBAL)
include(GNUInstallDirs)

function(basalt_add_plugin name)
  cmake_parse_arguments(ARG "NO_INSTALL" "INSTALL_DESTINATION" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "basalt_add_plugin(${name}): SOURCES is required")
  endif()
  set(target basalt-plugin-${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE Basalt::sdk ${ARG_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME basalt-${name}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(DEFINED BASALT_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${BASALT_PLUGIN_OUTPUT_DIR})
  endif()
  # export basalt_plugin_init only (libstdc++'s template instances would otherwise be exported too)
  set(map ${CMAKE_CURRENT_BINARY_DIR}/basalt-plugin-exports.map)
  if(NOT EXISTS ${map})
    file(WRITE ${map} "{\n  global: basalt_plugin_init;\n  local: *;\n};\n")
  endif()
  target_link_options(${target} PRIVATE "-Wl,--version-script=${map}")
  if(NOT BASALT_SANITIZE)
    # every undefined symbol must be resolved at link time: a plugin may not rely on libbasalt's symbols
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  if(NOT ARG_NO_INSTALL)
    if(ARG_INSTALL_DESTINATION)
      set(dest ${ARG_INSTALL_DESTINATION})
    elseif(DEFINED BASALT_INSTALL_PLUGINDIR)
      set(dest ${BASALT_INSTALL_PLUGINDIR})
    else()
      set(dest ${CMAKE_INSTALL_LIBDIR}/basalt/plugins)
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION ${dest})
  endif()
  set_property(GLOBAL APPEND PROPERTY BASALT_PLUGIN_TARGETS ${target})
endfunction()
