# cmake -DDIR=... -P CompressManPages.cmake: DIR/*.1 -> DIR/*.1.gz, gzip -9n (no name or time
# stamp in the header, so the package is reproducible; Debian wants compressed pages).
file(GLOB pages "${DIR}/*.1")
foreach(page IN LISTS pages)
  execute_process(COMMAND gzip -9n -c "${page}" OUTPUT_FILE "${page}.gz" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gzip ${page} failed")
  endif()
endforeach()
