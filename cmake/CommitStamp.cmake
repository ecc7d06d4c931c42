# Run at build time (not configure time, so a rebuild after a commit never reports the
# old one): writes OUT, a header defining SDSPEED_COMMIT, only when its text changes.
# The commit is $SDSPEED_COMMIT when set (a copied tree without its .git, e.g. the GPU
# machine: scripts pass the commit they were started from), else `git rev-parse` of
# SRC with "-dirty" when tracked files differ from it, else "unknown".
set(commit "$ENV{SDSPEED_COMMIT}")
if(NOT commit)
  execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND commit)
    execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                    OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(dirty)
      set(commit "${commit}-dirty")
    endif()
  else()
    set(commit unknown)
  endif()
endif()
set(text "#define SDSPEED_COMMIT \"${commit}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
