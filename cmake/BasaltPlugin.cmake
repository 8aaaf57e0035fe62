# basalt_add_plugin(<name> SOURCES <files...> [LIBRARIES <targets...>])
# Builds plugins/<name> as a loadable module `basalt-<name>.so` in the plugin folder beside libbasalt
# (build tree and install tree alike). Plugins see only the ABI headers and the header-only SDK; they
# never link libbasalt.
function(basalt_add_plugin name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES" ${ARGN})
  set(target basalt-plugin-${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE Basalt::sdk ${ARG_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME basalt-${name}
    LIBRARY_OUTPUT_DIRECTORY ${BASALT_PLUGIN_OUTPUT_DIR})
  if(NOT BASALT_SANITIZE)
    # every undefined symbol must be resolved at link time: a plugin may not rely on libbasalt's symbols
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  install(TARGETS ${target} LIBRARY DESTINATION ${BASALT_INSTALL_PLUGINDIR})
  set_property(GLOBAL APPEND PROPERTY BASALT_PLUGIN_TARGETS ${target})
endfunction()
