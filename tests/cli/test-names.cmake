# Fails when a Catch2 TEST_CASE name holds a ';': catch_discover_tests would split the name at it, and CTest would
# then run a filter that matches nothing, which passes without running the test.
file(GLOB sources "${SRC}/*.cpp")
set(bad "")
foreach(f ${sources})
  file(STRINGS "${f}" lines REGEX "TEST_CASE\\(\"[^\"]*\\;")
  foreach(l ${lines})
    string(APPEND bad "\n  ${f}: ${l}")
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "test names with ';' (CTest would run nothing for them):${bad}")
endif()
