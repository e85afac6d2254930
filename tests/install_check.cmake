# Installs qkv into a scratch prefix and checks that the binary, the man page
# (gzipped, with the project's version), the licence and changelog and the
# shell completions are there, that the playground's page is (when the build
# has it) and the installed qkv writes one, that a
# built-in example runs from another folder, and that the installed bash
# completion loads and completes a subcommand and an option.
#   cmake -DBINARY_DIR=... -DPREFIX=... [-DEMULATOR="qemu-aarch64-static -L ..."] -P install_check.cmake
separate_arguments(emulator UNIX_COMMAND "${EMULATOR}")
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BINARY_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE status OUTPUT_QUIET)
if(NOT status EQUAL 0)
    message(FATAL_ERROR "cmake --install failed")
endif()
foreach(path bin/qkv share/man/man1/qkv.1.gz share/bash-completion/completions/qkv
             share/zsh/vendor-completions/_qkv share/fish/vendor_completions.d/qkv.fish share/doc/qkv/LICENSE
             share/doc/qkv/copyright share/doc/qkv/changelog.gz)
    if(NOT EXISTS "${PREFIX}/${path}")
        message(FATAL_ERROR "${path} was not installed")
    endif()
endforeach()
execute_process(COMMAND ${emulator} "${PREFIX}/bin/qkv" run illustrated -s scores WORKING_DIRECTORY "${PREFIX}/share"
                RESULT_VARIABLE status OUTPUT_VARIABLE out)
if(NOT status EQUAL 0 OR NOT out MATCHES "16")
    message(FATAL_ERROR "the installed qkv did not run the built-in example: ${out}")
endif()

# the playground: a ready page, and the installed qkv writes one (or, built
# without emscripten, says that it cannot)
execute_process(COMMAND ${emulator} "${PREFIX}/bin/qkv" playground -o "${PREFIX}/page.html"
                RESULT_VARIABLE status ERROR_VARIABLE err)
if(PLAYGROUND)
    if(NOT status EQUAL 0 OR NOT EXISTS "${PREFIX}/share/qkv/playground.html" OR NOT EXISTS "${PREFIX}/page.html")
        message(FATAL_ERROR "the installed qkv wrote no playground page, or none was installed: ${err}")
    endif()
elseif(NOT status EQUAL 2 OR NOT err MATCHES "built without its playground")
    message(FATAL_ERROR "a qkv built without the playground did not say so: ${err}")
endif()

# the man page's .TH line carries the version `qkv --version` prints
execute_process(COMMAND ${emulator} "${PREFIX}/bin/qkv" --version OUTPUT_VARIABLE version)
execute_process(COMMAND gzip -dc "${PREFIX}/share/man/man1/qkv.1.gz" OUTPUT_VARIABLE page COMMAND_ERROR_IS_FATAL ANY)
string(REGEX MATCH "\n\\.TH [^\n]*" th "${page}")
if(NOT version MATCHES "^qkv ([0-9.]+) ")
    message(FATAL_ERROR "`qkv --version` printed no version: ${version}")
endif()
string(FIND "${th}" "\"qkv ${CMAKE_MATCH_1}\"" at)
if(at EQUAL -1)
    message(FATAL_ERROR "the installed man page's ${th} does not show the version of `qkv --version`: ${version}")
endif()

# bash: `qkv ex<TAB>` and `qkv run --dec<TAB>`, with the installed qkv first on PATH
set(completion "${PREFIX}/share/bash-completion/completions/qkv")
foreach(case "qkv ex|examples" "qkv run --dec|--decode" "qkv run -f l|latex" "qkv bench --kv|--kv-heads")
    string(REPLACE "|" ";" case "${case}")
    list(GET case 0 line)
    list(GET case 1 expected)
    execute_process(
        COMMAND bash -c "source \"$0\" && COMP_LINE=\"$1\" && read -ra COMP_WORDS <<< \"$1\" && COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)) && _qkv && echo \"\${COMPREPLY[*]}\""
                "${completion}" "${line}"
        RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT status EQUAL 0 OR NOT out MATCHES "(^| )${expected}( |\n)")
        message(FATAL_ERROR "bash completes `${line}` as `${out}`, expected ${expected} (status ${status}): ${err}")
    endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
