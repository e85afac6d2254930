# The build lists its sources by hand (cmake/sources.cmake, tests/CMakeLists.txt);
# this finds a .cpp file in src/ or tests/unit/ that no target compiles.
#   cmake -DSOURCE_DIR=... -DBUILT=built_sources.txt -P check_sources.cmake
cmake_minimum_required(VERSION 3.25)
file(READ ${BUILT} built)
file(GLOB_RECURSE present ${SOURCE_DIR}/src/*.cpp ${SOURCE_DIR}/tests/unit/*.cpp)
set(problems "")
foreach(file IN LISTS present)
    if(NOT file IN_LIST built)
        file(RELATIVE_PATH name ${SOURCE_DIR} ${file})
        string(APPEND problems "${name} is not in the build: add it to its folder's list in cmake/sources.cmake, or to tests/CMakeLists.txt\n")
    endif()
endforeach()
if(problems)
    message(FATAL_ERROR "${problems}")
endif()
list(LENGTH present count)
message(STATUS "all ${count} .cpp files of src/ and tests/unit/ are built")
