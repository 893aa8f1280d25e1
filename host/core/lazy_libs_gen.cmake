# Writes OUT, a C file (top-level asm and tables): the stubs through which
# the navette program calls the libraries it loads on first use
# (host/cli/lazy_libs.c explains why).
#
# Every function that INPUTS (libnavette.a) calls and that one of LIBS
# (shared libraries, "|"-separated paths) defines gets a stub of the same
# name: `jmp *slot`. A slot starts at a thunk that asks nv_lazy_resolve()
# to dlopen the library by its SONAME and fill every slot of it.
# Every place reached by an indirect jump or call (a stub: callers may
# take its address; a thunk: reached through its slot) starts with
# endbr64, so the code holds where indirect branch tracking is enforced
# (a build with -fcf-protection marks the object as compatible). A library
# whose data (not functions) navette uses is left to the linker as usual.
#
# x86-64 ELF only; host/core/lazy_libs.cmake turns it off elsewhere.
string(REPLACE "|" ";" libs "${LIBS}")
string(REPLACE "|" ";" inputs "${INPUTS}")

set(wanted "")
foreach(input ${inputs})
  execute_process(COMMAND ${NM} -u -P ${input} OUTPUT_VARIABLE out
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "lazy_libs: ${NM} -u ${input} failed")
  endif()
  string(REGEX MATCHALL "(^|\n)[A-Za-z_][A-Za-z0-9_]* U" found "${out}")
  foreach(f ${found})
    string(REGEX REPLACE "^\n?([A-Za-z0-9_]+) U$" "\\1" f "${f}")
    list(APPEND wanted ${f})
  endforeach()
endforeach()
list(REMOVE_DUPLICATES wanted)

set(sonames "")
set(symbols "")
set(owners "")
set(nlib 0)
foreach(lib ${libs})
  execute_process(COMMAND ${OBJDUMP} -p ${lib} OUTPUT_VARIABLE out
                  RESULT_VARIABLE rc)
  string(REGEX MATCH "SONAME +([^ \n]+)" m "${out}")
  if(NOT rc EQUAL 0 OR NOT m)
    message(STATUS "lazy_libs: no SONAME in ${lib}; linked as usual")
    continue()
  endif()
  set(soname ${CMAKE_MATCH_1})
  execute_process(COMMAND ${NM} -D -P --defined-only ${lib}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "lazy_libs: ${NM} -D ${lib} failed")
  endif()
  string(REGEX MATCHALL "(^|\n)[A-Za-z_][A-Za-z0-9_]*(@@?[A-Za-z0-9_.]+)? [A-Za-z]"
         defs "${out}")
  set(funcs "")
  set(data_used "")
  foreach(d ${defs})
    string(REGEX REPLACE "^\n?([A-Za-z0-9_]+)(@@?[A-Za-z0-9_.]+)? ([A-Za-z])$"
           "\\1;\\3" d "${d}")
    list(GET d 0 name)
    list(GET d 1 type)
    list(FIND wanted ${name} at)
    if(at EQUAL -1)
      continue()
    endif()
    if(type STREQUAL "T" OR type STREQUAL "W" OR type STREQUAL "i")
      list(APPEND funcs ${name})
    else()
      list(APPEND data_used ${name})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES funcs)
  if(data_used)
    message(STATUS "lazy_libs: ${soname} linked as usual (data used: ${data_used})")
    continue()
  endif()
  if(NOT funcs)
    continue()
  endif()
  list(SORT funcs)
  foreach(f ${funcs})
    list(FIND symbols ${f} at)
    if(at EQUAL -1)
      list(APPEND symbols ${f})
      list(APPEND owners ${nlib})
    endif()
  endforeach()
  list(APPEND sonames ${soname})
  math(EXPR nlib "${nlib} + 1")
endforeach()

# The asm is kept as lines, written below as the strings of one __asm__.
set(asm "\t.text")
set(slots "")
set(names "")
set(owner_list "")
set(i 0)
foreach(f ${symbols})
  list(GET owners ${i} owner)
  math(EXPR offset "${i} * 8")
  list(APPEND asm "\t.p2align 4" "\t.globl ${f}" "\t.hidden ${f}"
       "\t.type ${f}, @function" "${f}:" "\t.cfi_startproc" "\tendbr64"
       "\tjmp *nv_lazy_slots+${offset}(%rip)"
       "nv_lazy_thunk_${i}:" "\tendbr64" "\tmovl $${i}, %r11d"
       "\tjmp nv_lazy_enter"
       "\t.cfi_endproc" "\t.size ${f}, .-${f}")
  list(APPEND slots "\t.quad nv_lazy_thunk_${i}")
  string(APPEND names "\t\"${f}\",\n")
  string(APPEND owner_list "${owner}, ")
  math(EXPR i "${i} + 1")
endforeach()
# The common thunk keeps every argument register (and %al, the count of
# vector registers of a variadic call) across the resolver, then jumps to
# the real function as if it had been called directly. At entry %rsp is
# 8 mod 16; seven pushes make it 0, as the call needs.
# The .cfi lines let debuggers and profilers unwind through it.
list(APPEND asm "\t.p2align 4" "nv_lazy_enter:" "\t.cfi_startproc"
     "\tendbr64")
foreach(r rdi rsi rdx rcx r8 r9 rax)
  list(APPEND asm "\tpushq %${r}" "\t.cfi_adjust_cfa_offset 8")
endforeach()
list(APPEND asm "\tsubq $128, %rsp" "\t.cfi_adjust_cfa_offset 128")
foreach(r 0 1 2 3 4 5 6 7)
  math(EXPR o "${r} * 16")
  list(APPEND asm "\tmovdqu %xmm${r}, ${o}(%rsp)")
endforeach()
list(APPEND asm "\tmovl %r11d, %edi" "\tcall nv_lazy_resolve" "\tmovq %rax, %r11")
foreach(r 0 1 2 3 4 5 6 7)
  math(EXPR o "${r} * 16")
  list(APPEND asm "\tmovdqu ${o}(%rsp), %xmm${r}")
endforeach()
list(APPEND asm "\taddq $128, %rsp" "\t.cfi_adjust_cfa_offset -128")
foreach(r rax r9 r8 rcx rdx rsi rdi)
  list(APPEND asm "\tpopq %${r}" "\t.cfi_adjust_cfa_offset -8")
endforeach()
list(APPEND asm "\tjmp *%r11" "\t.cfi_endproc"
     "\t.size nv_lazy_enter, .-nv_lazy_enter"
     "\t.data" "\t.p2align 3" "\t.globl nv_lazy_slots" "\t.hidden nv_lazy_slots"
     "nv_lazy_slots:" ${slots} "\t.quad 0" "\t.text")

set(c "/* Generated by host/core/lazy_libs_gen.cmake: do not edit. */\n")
string(APPEND c "#include <stddef.h>\n\n__asm__(\n")
foreach(line ${asm})
  string(REPLACE "\t" "\\t" line "${line}")
  string(APPEND c "\t\"${line}\\n\"\n")
endforeach()
string(APPEND c ");\n\n")
string(APPEND c "const size_t nv_lazy_symbol_count = ${i};\n")
set(sonames_c "")
foreach(s ${sonames})
  string(APPEND sonames_c "\t\"${s}\",\n")
endforeach()
string(APPEND c "const char *const nv_lazy_sonames[] = {\n${sonames_c}\tNULL};\n")
string(APPEND c "const char *const nv_lazy_symbols[] = {\n${names}\tNULL};\n")
string(APPEND c "const unsigned char nv_lazy_owners[] = {${owner_list}0};\n")
string(APPEND c "unsigned char nv_lazy_loaded[${nlib} + 1];\n")
string(APPEND c "unsigned char nv_lazy_missing[${i} + 1];\n")

file(WRITE ${OUT}.tmp "${c}")
file(RENAME ${OUT}.tmp ${OUT})
list(LENGTH sonames n)
message(STATUS "lazy_libs: ${i} functions of ${n} libraries: ${sonames}")
