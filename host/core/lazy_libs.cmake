# Included by CMakeLists.txt after the navette program is defined: links it
# against stubs of every library but Lua (libcurl, libgit2, libcrypto,
# sqlite3, cjson, expat, zlib, and Vectorscan and libdeflate where found)
# that load each library on first use
# (host/cli/lazy_libs.c), so that commands which never touch them start
# without mapping and relocating them and the 35 libraries they bring.
#
# NAVETTE_LAZY_LIBS=OFF links them as usual. It is off where the stubs are
# not written (anything but x86-64 ELF) and under the sanitizers, which
# must see every library from the start.
set(lazy_default OFF)
if(CMAKE_SYSTEM_NAME STREQUAL "Linux"
   AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$"
   AND NOT NAVETTE_SANITIZE AND NOT NAVETTE_FUZZ
   AND CMAKE_NM AND CMAKE_OBJDUMP)
  set(lazy_default ON)
endif()
option(NAVETTE_LAZY_LIBS "navette loads its libraries but Lua on first use"
       ${lazy_default})

if(NAVETTE_LAZY_LIBS)
  set(lazy_libs "")
  foreach(lib ${navette_DEPS_LINK_LIBRARIES})
    get_filename_component(name ${lib} NAME)
    if(name MATCHES "^lib(curl|git2|crypto|ssl|sqlite3|expat|z|cjson|hs|deflate)\\.so")
      list(APPEND lazy_libs ${lib})
    endif()
  endforeach()
  string(REPLACE ";" "|" lazy_libs "${lazy_libs}")
  set(lazy_out ${CMAKE_BINARY_DIR}/generated/lazy_stubs.c)
  add_custom_command(
    OUTPUT ${lazy_out}
    COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DOBJDUMP=${CMAKE_OBJDUMP}
            "-DLIBS=${lazy_libs}" "-DINPUTS=$<TARGET_FILE:navette_lib>"
            -DOUT=${lazy_out}
            -P ${CMAKE_CURRENT_LIST_DIR}/lazy_libs_gen.cmake
    DEPENDS navette_lib ${CMAKE_CURRENT_LIST_DIR}/lazy_libs_gen.cmake
    COMMENT "Stubs of the libraries navette loads on first use" VERBATIM)
  target_sources(navette PRIVATE ${lazy_out})
  target_compile_definitions(navette PRIVATE NAVETTE_LAZY_LIBS)
  # the stubs come first on the link line; --as-needed then drops the
  # libraries they stand for from the program's DT_NEEDED
  target_link_options(navette PRIVATE LINKER:--as-needed)
  target_link_libraries(navette PRIVATE ${CMAKE_DL_LIBS})
endif()
