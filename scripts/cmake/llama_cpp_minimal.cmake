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

# ggml's AMX matmul kernels (compiled in whenever -march=native reports AMX) fault in their first
# tile instruction on some Sapphire Rapids hosts: the tile configuration they build on the stack can
# reach ldtilecfg invalid, and the process dies with SIGSEGV on the first decode. The AVX-512 VNNI
# kernels serve the same quantized types, so the AMX ISA is left out; GCC and Clang honour an explicit
# -mno-* over -march=native whatever the order.
include(CheckCCompilerFlag)
check_c_compiler_flag("-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" EVENTFOLD_CC_HAS_NO_AMX)
if (EVENTFOLD_CC_HAS_NO_AMX)
    add_compile_options(-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
endif()
