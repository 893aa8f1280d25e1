# What ships beside the navette command for its users: the man page, shell
# completions for bash, zsh and fish, and the LuaLS definitions recipe
# authors point their editor at. Completions and definitions are made at
# build time by the navette just built (`navette completion SHELL`,
# `navette definitions FILE`), from the very tables the command line and
# the validators use, so what is installed cannot drift from the binary.
# Included by the top CMakeLists.txt; run with -P, this file is the
# generation step itself.

if(CMAKE_SCRIPT_MODE_FILE)
  # cmake -DNAVETTE=BIN -DWHAT=bash|zsh|fish|definitions -DOUT=FILE
  #       -DHOME_DIR=DIR -P install_docs.cmake
  # A home of the build tree's own: the user's is never touched, and the
  # library compiled into the binary is used, not one from disk.
  set(ENV{NAVETTE_HOME} "${HOME_DIR}")
  unset(ENV{NAVETTE_LUA_PATH})
  if(WHAT STREQUAL "definitions")
    execute_process(COMMAND "${NAVETTE}" definitions "${OUT}"
                    RESULT_VARIABLE status)
  else()
    execute_process(COMMAND "${NAVETTE}" completion "${WHAT}"
                    OUTPUT_FILE "${OUT}.tmp" RESULT_VARIABLE status)
    if(status EQUAL 0)
      file(RENAME "${OUT}.tmp" "${OUT}")
    endif()
  endif()
  if(NOT status EQUAL 0)
    file(REMOVE "${OUT}.tmp")
    message(FATAL_ERROR "navette ${WHAT}: exit status ${status}")
  endif()
  return()
endif()

include(GNUInstallDirs)

install(FILES ${CMAKE_CURRENT_LIST_DIR}/navette.1
        DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
# the manual's pages (`navette help TOPIC` prints the same, compiled in)
file(GLOB NAVETTE_DOC_PAGES ${CMAKE_SOURCE_DIR}/lua/navette/doc/*.md)
install(FILES ${NAVETTE_DOC_PAGES} DESTINATION ${CMAKE_INSTALL_DOCDIR})

if(CMAKE_CROSSCOMPILING AND NOT CMAKE_CROSSCOMPILING_EMULATOR)
  message(STATUS "cross-compiling: shell completions and LuaLS definitions "
                 "are not generated (run `navette completion SHELL` and "
                 "`navette definitions FILE` on the target)")
  return()
endif()

set(NAVETTE_DOCS_SCRIPT ${CMAKE_CURRENT_LIST_FILE})
set(NAVETTE_DOCS_DIR ${CMAKE_BINARY_DIR}/share)
set(NAVETTE_DOCS_HOME ${CMAKE_BINARY_DIR}/docs-home)
# file made -> {what, install folder, installed name}
set(NAVETTE_DOCS
    "bash-completion/completions/navette|bash"
    "zsh/site-functions/_navette|zsh"
    "fish/vendor_completions.d/navette.fish|fish"
    "navette/lua/navette.lua|definitions")
set(NAVETTE_DOCS_OUTPUTS)
foreach(entry ${NAVETTE_DOCS})
  string(REPLACE "|" ";" parts "${entry}")
  list(GET parts 0 path)
  list(GET parts 1 what)
  set(out ${NAVETTE_DOCS_DIR}/${path})
  get_filename_component(dir ${out} DIRECTORY)
  file(MAKE_DIRECTORY ${dir})
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DNAVETTE=$<TARGET_FILE:navette> -DWHAT=${what}
            -DOUT=${out} -DHOME_DIR=${NAVETTE_DOCS_HOME}
            -P ${NAVETTE_DOCS_SCRIPT}
    DEPENDS navette ${NAVETTE_DOCS_SCRIPT}
    COMMENT "navette ${what}: ${path}"
    VERBATIM)
  list(APPEND NAVETTE_DOCS_OUTPUTS ${out})
  get_filename_component(rel_dir ${path} DIRECTORY)
  install(FILES ${out} DESTINATION ${CMAKE_INSTALL_DATADIR}/${rel_dir})
endforeach()
add_custom_target(navette_docs ALL DEPENDS ${NAVETTE_DOCS_OUTPUTS})
