# Code that runs inside someone else's process (the collector, the CUPTI injection library,
# the NCCL plugins, and test programs they are injected into) is never built with the
# sanitizers or fuzzing instrumentation of the asan/fuzz presets: a sanitizer runtime must be
# the first library of a process, which a library LD_PRELOADed or dlopen'ed into an
# uninstrumented job can never be. Nor does it take the project's -march level: it must load
# into any process on any x86-64 CPU.

# For every target defined after it in the current directory.
macro(tt_in_job_directory)
  get_directory_property(_tt_opts COMPILE_OPTIONS)
  list(FILTER _tt_opts EXCLUDE REGEX "^-fsanitize|^-march")
  set_directory_properties(PROPERTIES COMPILE_OPTIONS "${_tt_opts}")
  get_directory_property(_tt_lopts LINK_OPTIONS)
  list(FILTER _tt_lopts EXCLUDE REGEX "^-fsanitize")
  set_directory_properties(PROPERTIES LINK_OPTIONS "${_tt_lopts}")
endmacro()

# For one target already defined (e.g. a test program run under `tracetune record`).
function(tt_in_job_target target)
  foreach(prop COMPILE_OPTIONS LINK_OPTIONS)
    get_target_property(_opts ${target} ${prop})
    if(_opts)
      list(FILTER _opts EXCLUDE REGEX "^-fsanitize|^-march")
      set_target_properties(${target} PROPERTIES ${prop} "${_opts}")
    endif()
  endforeach()
endfunction()
