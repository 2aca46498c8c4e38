"""The standalone .cu of a dynamic result holding every micro-kernel family: each case launches its
kernel as ops.HgemmDispatch does (its arguments in the template's order, TMA maps encoded per call,
the split-K workspace at HgemmDispatch's offset, the grid at M), the workspace size covers every M of
the range, the host part (a plain C++ compiler) dispatches and sizes as Python does, and nvcc, where
installed, builds the whole file for sm_90a."""

import shutil
import subprocess

import pytest

from autosched.dynamic.export import c_name, export_cu
from autosched.dynamic.handmade import handmade_result
from autosched.dynamic.workload import DynamicWorkload
from autosched.templates.micro_kernels import dynamic_templates
from autosched.templates.hgemm_wgmma_splitk import counter_bytes, dynamic_workspace
from every_family import DYN, KERNELS, SPLIT, TOPS

@pytest.fixture(scope="module")
def res():
    return handmade_result(DynamicWorkload.parse("hgemm", "Mx768x3072_bt", (1, 2048)), KERNELS, TOPS, "H100|x")


@pytest.fixture(scope="module")
def cu(res, h100, tmp_path_factory):
    return export_cu(res, tmp_path_factory.mktemp("export") / "all.cu", h100)


def _case(text: str, i: int) -> str:
    case = text[text.index(f"    case {i}: {{"):]
    return case[:case.index("break;")]


def test_every_family_launches_as_its_template_renders(res, cu, h100):
    text = cu.read_text()
    dw = res.workload
    for i, (fam, c) in enumerate(KERNELS):
        spec = dynamic_templates()[fam]().render(dw.largest, c, h100)
        case = _case(text, i)
        assert f"{spec.name_expression}<<<" in case and f"{spec.smem_bytes}, stream>>>" in case, fam
    assert "(A, B, C, ws, M, 768, 3072)" in _case(text, 1)                  # hgemm_stream: pointers, workspace
    for i in (2, 3, 4):
        assert "(ma, mb, mc, M, 768, 3072, ws)" in _case(text, i)            # maps, then the workspace
    for i in (5, 6):
        assert "(ma, mb, mc, M, 768, 3072)" in _case(text, i)
    assert "ws = nullptr" in _case(text, 3)                                 # unsplit swap: never read
    # the swap's maps: X in (64, BT) boxes over (K, M), W in (64, BW) over (K, N), Y in (64, BT) over (N, M)
    enc = "autosched_tma::encode_map(&{}, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, {}, {}, {}, {}, 64, {},"
    assert enc.format("ma", "A", 3072, "M", 6144, 32) in _case(text, 2)
    assert enc.format("mb", "B", 3072, 768, 6144, 64) in _case(text, 2)
    assert enc.format("mc", "C", 768, "M", 1536, 32) in _case(text, 2)
    # hgemm_wgmma's A box follows M below BM
    assert enc.format("ma", "A", 3072, "M", 6144, "(M < 128 ? (M + 15) / 16 * 16 : 128)") in _case(text, 5)
    assert "dim3(24, 2, (M + 15) / 16)" in _case(text, 1)
    assert "((M + 31) / 32) * 12 * 3;" in _case(text, 2) and "units < 132 ? units : 132" in _case(text, 2)
    # slices summed in a cluster: hgemm_wgmma_swap_cluster (cluster dims compiled in) over every work unit,
    # a null workspace
    assert "hgemm_wgmma_swap_cluster<0, 64, 32, 128, 16, 2><<<dim3(units, 1, 1)" in _case(text, 7)
    assert "((M + 31) / 32) * 12 * 2;" in _case(text, 7) and "ws = nullptr" in _case(text, 7)


def test_the_workspace_covers_every_m_in_hgemm_dispatchs_layout(res, cu):
    text = cu.read_text()
    dw = res.workload
    region = max(counter_bytes(-(-2048 // r) * -(-768 // c)) for r, c in SPLIT.values())
    need = max(dynamic_workspace(m, 768, *SPLIT[i], KERNELS[i][1]["split_k"], region)[1]
               for m in range(1, 2049) if (i := res.dispatcher(m)) in SPLIT)
    assert f"_workspace_bytes(void) {{ return {need}; }}" in text
    for i, (rows, cols) in SPLIT.items():
        case = _case(text, i)
        assert f"if (M > {dw.hi} || workspace == nullptr) return cudaErrorInvalidValue;" in case
        assert f"const long long tiles = (long long)((M + {rows - 1}) / {rows}) * {768 // cols};" in case
        assert f"(unsigned char*)workspace + {region} - (tiles * 4 + 255) / 256 * 256;" in case


def test_the_host_part_dispatches_and_sizes_as_python(res, cu, tmp_path):
    cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    name = c_name(res)
    main_cc = tmp_path / "main.cc"
    main_cc.write_text(f'#include "{cu}"\n#include <cstdio>\nint main() {{ std::printf("%zu\\n", {name}_workspace_bytes()); '
                       f'for (int m = 1; m <= 2048; ++m) std::printf("%d\\n", {name}_dispatch(m)); }}\n')
    exe = tmp_path / "main"
    subprocess.run([cxx, "-x", "c++", "-std=c++17", "-Wall", "-Werror", "-o", str(exe), str(main_cc)], check=True,
                   capture_output=True, text=True)
    out = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]
    assert out[0] == int(cu.read_text().split("_workspace_bytes(void) { return ")[1].split(";")[0]) > 0
    assert out[1:] == [res.dispatcher(m) for m in range(1, 2049)]


def test_nvcc_builds_every_family(cu, tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed: the text and the host part are checked only")
    r = subprocess.run(["nvcc", "-gencode", "arch=compute_90a,code=sm_90a", "-c", str(cu), "-o", str(tmp_path / "a.o")],
                       capture_output=True, text=True)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr[-3000:]


def test_a_layout_or_dtype_the_launcher_does_not_take_is_refused(h100, tmp_path):
    for shape, why in (("Mx768x3072", "layout nt"), ("Mx768x3072_bt_bf16", "half pointers")):
        dw = DynamicWorkload.parse("hgemm", shape, (1, 256))
        r = handmade_result(dw, [("hgemm_dyn", DYN), KERNELS[5]], [16], "H100|x")
        with pytest.raises(ValueError, match=why):
            export_cu(r, tmp_path / "x.cu", h100)
