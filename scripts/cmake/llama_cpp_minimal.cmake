# Included right after llama.cpp's own project() call (scripts/install.sh passes
# -DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file> through CMAKE_ARGS).
#
# eventfold loads only libllama and libggml* through llama-cpp-python's ctypes bindings. llama.cpp's
# `common` library (chat/template parsers, argument parsing, HTTP downloads through cpp-httplib) is
# linked by none of them, yet it is most of the build (about 60% of the compile time on 2 cores).
# llama-cpp-python forces LLAMA_BUILD_COMMON=ON in the CMake cache; a directory-scope variable set here
# shadows that cache entry inside llama.cpp (policies CMP0077/CMP0126 are NEW there), so `common` and
# cpp-httplib are neither built nor installed.
set(LLAMA_BUILD_COMMON OFF)
