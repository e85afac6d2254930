# Writes the CTest labels of qkv_tests' test cases, from their Catch2 tags:
#   [cli]        starts the qkv binary as a subprocess     → cli
#   [documents]  renders output with pandoc, pdflatex, xmllint or python3 → documents
#   [browser]    shows output in a terminal (tmux) or a browser → browser
#   [slow]       takes seconds, not milliseconds            → slow
# and `unit` for a test that is none of cli, documents and browser: it runs
# in-process and needs nothing but the build. The tests themselves check that
# a test which starts qkv, pandoc or tmux has the tag (support.hpp, require_tag).
#   cmake -DTEST_EXECUTABLE=... -DOUTPUT=... [-DEMULATOR=...] -P catch_labels.cmake
# (EMULATOR: what runs a cross-compiled test binary, e.g. qemu-aarch64-static)
cmake_minimum_required(VERSION 3.25)

# The names of the test cases that match a Catch2 test spec (all without one).
function(list_tests spec result)
    execute_process(COMMAND ${EMULATOR} "${TEST_EXECUTABLE}" ${spec} --list-test-names-only
                    OUTPUT_VARIABLE output RESULT_VARIABLE status)
    if(status LESS 0)
        message(FATAL_ERROR "${TEST_EXECUTABLE} --list-test-names-only failed: ${status}")
    endif()
    string(REPLACE ";" "\\;" output "${output}")
    string(REPLACE "\n" ";" output "${output}")
    list(FILTER output EXCLUDE REGEX "^$")
    set(${result} "${output}" PARENT_SCOPE)
endfunction()

set(k_tags cli documents browser slow)
list_tests("" all)
foreach(tag IN LISTS k_tags)
    list_tests("[${tag}]" tagged_${tag})
endforeach()

set(script "")
foreach(test IN LISTS all)
    set(labels "")
    foreach(tag IN LISTS k_tags)
        if(test IN_LIST tagged_${tag})
            list(APPEND labels ${tag})
        endif()
    endforeach()
    if(NOT "cli" IN_LIST labels AND NOT "documents" IN_LIST labels AND NOT "browser" IN_LIST labels)
        list(PREPEND labels unit)
    endif()
    string(APPEND script "set_tests_properties([==[${test}]==] PROPERTIES LABELS \"${labels}\")\n")
endforeach()
file(WRITE "${OUTPUT}" "${script}")
