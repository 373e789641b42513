"""The installed llama.cpp is the one `scripts/install.sh` builds: without ggml's AMX kernels, which fault
on their first tile instruction on some Sapphire Rapids hosts (the first decode dies with SIGSEGV), and with
the CPU features the host has (`-march=native`)."""

from __future__ import annotations

from types import ModuleType

import pytest


def _system_info(llama_cpp: ModuleType) -> str:
    return llama_cpp.llama_print_system_info().decode()


def test_the_build_leaves_out_the_amx_kernels(llama_cpp: ModuleType):
    info = _system_info(llama_cpp)
    assert "CPU :" in info  # the CPU backend reports its features
    assert "AMX_INT8 = 1" not in info, f"llama.cpp was built with AMX kernels: {info}"


def test_the_build_uses_the_hosts_vector_units(llama_cpp: ModuleType):
    info = _system_info(llama_cpp)
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        flags = f.read()
    if " avx2 " not in flags:
        pytest.skip("the host has no AVX2")
    assert "AVX2 = 1" in info, f"llama.cpp was built without the host's AVX2: {info}"
