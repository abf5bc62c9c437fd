# Writes the shipped fp-throughput profile with one derived figure's first term scaled (FIGURE,
# FACTOR) to OUT, then runs COUNTER_CHECK on RESULT through it and prints what it says: the
# planted wrong scale the tensor count check must report.
file(READ "${PROFILE}" doc)
string(JSON n LENGTH "${doc}" derived)
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${doc}" derived ${i} name)
  if(name STREQUAL FIGURE)
    string(JSON doc SET "${doc}" derived ${i} sum 0 scale "${FACTOR}")
  endif()
endforeach()
file(WRITE "${OUT}" "${doc}")
execute_process(COMMAND "${COUNTER_CHECK}" "${RESULT}" --profile "${OUT}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}exit ${rc}")
