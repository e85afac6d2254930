# Installs qkv into a scratch prefix and checks that the binary and the man page
# are there and that a built-in example runs from another folder.
#   cmake -DBINARY_DIR=... -DPREFIX=... -P install_check.cmake
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BINARY_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE status OUTPUT_QUIET)
if(NOT status EQUAL 0)
    message(FATAL_ERROR "cmake --install failed")
endif()
foreach(path bin/qkv share/man/man1/qkv.1)
    if(NOT EXISTS "${PREFIX}/${path}")
        message(FATAL_ERROR "${path} was not installed")
    endif()
endforeach()
execute_process(COMMAND "${PREFIX}/bin/qkv" run illustrated -s scores WORKING_DIRECTORY "${PREFIX}/share"
                RESULT_VARIABLE status OUTPUT_VARIABLE out)
if(NOT status EQUAL 0 OR NOT out MATCHES "16")
    message(FATAL_ERROR "the installed qkv did not run the built-in example: ${out}")
endif()
file(REMOVE_RECURSE "${PREFIX}")
