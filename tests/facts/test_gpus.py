"""GPU facts: the shipped table, matched from nvidia-smi names, and --gpu NAME[xN]."""
import pytest

from driftwatch.errors import InputError
from driftwatch.facts import gpu_facts, lookup_gpu, parse_gpu_option
from driftwatch.facts.gpu import gpu_table


@pytest.mark.parametrize("name, key", [
    ("NVIDIA RTX A6000", "rtx-a6000"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA H200 NVL", "h200-nvl"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-blackwell"),
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "rtx-pro-6000-blackwell"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA GeForce RTX 5090", "rtx-5090"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H100 NVL", "h100-nvl"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm-80"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80"),
    ("NVIDIA A100-PCIE-40GB", "a100-40"),
    ("NVIDIA L40S", "l40s"),
    ("NVIDIA L4", "l4"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
    ("NVIDIA GB10", "gb10"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA H20", "h20"),
    ("NVIDIA H20-3e", "h20-3e"),
    ("NVIDIA H800", "h800"),
    ("NVIDIA H800 PCIe", "h800-pcie"),
    ("NVIDIA A800-SXM4-80GB", "a800-sxm-80"),
    ("NVIDIA A800 80GB PCIe", "a800-pcie-80"),
    ("NVIDIA L20", "l20"),
])
def test_nvidia_smi_names(name, key):
    assert lookup_gpu(name).key == key


@pytest.mark.parametrize("name", ["Tesla T4", "NVIDIA A10G", "AMD Instinct MI250X", "", None, 42])
def test_unknown_gpus_stay_unknown(name):
    assert lookup_gpu(name) is None


def test_every_row_cites_the_vendor_and_is_plausible():
    rows = gpu_table()
    assert len({r.key for r in rows}) == len(rows)
    vendor = ("https://www.nvidia.com/", "https://images.nvidia.com/", "https://www.amd.com/")
    for r in rows:
        # a vendor or derived row cites the vendor's sheet; only a part with no vendor sheet at all
        # (China-market H20, H20-3e, L20) cites reported figures, and says so
        assert r.source_kind in ("vendor", "derived", "reported"), r.key
        assert r.source.startswith(vendor) == (r.source_kind != "reported"), r.key
        assert r.source.startswith("https://"), r.key
        assert 100 <= r.bandwidth_gbs <= 10000 and 10 <= r.memory_gb <= 300 and 50 <= r.bf16_tflops <= 3000
        assert r.fp8_tflops is None or r.fp8_tflops >= r.bf16_tflops
        assert r.interconnect in ("nvlink", "xgmi", "pcie", "network")
        assert r.source.startswith("https://www.amd.com/") == (r.interconnect == "xgmi"), r.key


@pytest.mark.parametrize("name, key", [("AMD Instinct MI300X", "mi300x"), ("AMD Instinct MI325X", "mi325x"),
                                       ("AMD Instinct MI355X", "mi355x"), ("MI300X", "mi300x")])
def test_amd_instinct_parts_are_known(name, key):
    spec = lookup_gpu(name)
    assert spec is not None and spec.key == key and spec.interconnect == "xgmi"
    g = gpu_facts(parse_gpu_option(f"{name}x8"))
    assert g.count == 8 and g.spec.key == key


def test_gpu_facts_from_a_snapshot_list():
    g = gpu_facts([{"index": 0, "name": "NVIDIA RTX A6000", "memory_total": "49140 MiB"},
                   {"index": 1, "name": "NVIDIA RTX A6000", "memory_total": "49140 MiB"}])
    assert g.count == 2 and g.spec.bandwidth_gbs == 768 and g.interconnect == "pcie"
    assert not g.interconnect_known and not g.mixed and g.label() == "2× NVIDIA RTX A6000"
    assert gpu_facts([{"name": "NVIDIA H200"}], "nvlink").interconnect_known
    assert gpu_facts([{"name": "NVIDIA H200"}, {"name": "NVIDIA L4"}]).mixed
    assert gpu_facts([{"name": "Tesla T4"}]) is None and gpu_facts(None) is None and gpu_facts([]) is None


@pytest.mark.parametrize("value, count, key", [
    ("H200", 1, "h200"), ("RTX A6000x2", 2, "rtx-a6000"), ("RTX A6000 x 2", 2, "rtx-a6000"),
    ("4x RTX PRO 6000", 4, "rtx-pro-6000-blackwell"), ("NVIDIA GeForce RTX 4090×8", 8, "rtx-4090"),
    ("NVIDIA H100 80GB HBM3", 1, "h100-sxm"),
])
def test_gpu_option(value, count, key):
    gpus = parse_gpu_option(value)
    assert len(gpus) == count and lookup_gpu(gpus[0]["name"]).key == key
    assert gpus[0]["name"].startswith("NVIDIA")


@pytest.mark.parametrize("value", ["", "Tesla T4", "H200x0"])
def test_gpu_option_refuses(value):
    with pytest.raises(InputError):
        parse_gpu_option(value)


NVLINK_TOPO = """\
\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tNV18\tNV18\t0-55\t0\t\tN/A
GPU1\tNV18\t X \tNV18\tNV18\t0-55\t0\t\tN/A
GPU2\tNV18\tNV18\t X \tNV18\t0-55\t0\t\tN/A
GPU3\tNV18\tNV18\tNV18\t X \t0-55\t0\t\tN/A

Legend:

  X    = Self
  NV#  = Connection traversing a bonded set of # NVLinks
"""
PCIE_TOPO = """\
        GPU0    GPU1    CPU Affinity    NUMA Affinity
GPU0     X      PHB     0-31            0
GPU1    PHB      X      0-31            0
"""


def test_topology_from_nvidia_smi_topo():
    from driftwatch.facts.gpu import parse_topology
    assert parse_topology(NVLINK_TOPO) == "nvlink"
    assert parse_topology(PCIE_TOPO) == "pcie"
    assert parse_topology(PCIE_TOPO.replace("PHB", "NV4", 1)) == "pcie"  # one pair over PCIe is enough
    assert parse_topology("        GPU0\nGPU0     X      0-31\n") == "none"
    assert parse_topology("No devices were found") is None and parse_topology(None) is None
    g = gpu_facts([{"name": "NVIDIA RTX A6000"}, {"name": "NVIDIA RTX A6000"}], parse_topology(NVLINK_TOPO))
    assert g.interconnect == "nvlink" and g.interconnect_known  # an NVLink bridge on a PCIe card


def test_china_market_parts_keep_their_own_link_and_memory():
    # the export variants differ from their parents where it matters to the roofline: NVLink of the
    # H800/A800, compute of the H20 (its bandwidth is higher than the H100's), HBM3e of the H20-3e
    h800, h100, h20, h20e, a800 = (lookup_gpu(n) for n in ("NVIDIA H800", "NVIDIA H100 80GB HBM3", "NVIDIA H20",
                                                           "NVIDIA H20-3e", "NVIDIA A800-SXM4-80GB"))
    assert h800.interconnect == "nvlink" and h800.link_gbs < h100.link_gbs and h800.bf16_tflops == h100.bf16_tflops
    assert h20.bandwidth_gbs > h100.bandwidth_gbs and h20.bf16_tflops < h100.bf16_tflops / 5
    assert h20e.memory_gb > h20.memory_gb and h20e.bf16_tflops == h20.bf16_tflops
    assert a800.interconnect == "nvlink" and a800.link_gbs == 400
    assert lookup_gpu("NVIDIA L20").interconnect == "pcie"


def test_an_unknown_gpu_at_tp8_is_not_charged_pcie_all_reduces_and_widens_the_interval():
    # an unknown GPU: the reference GPU stands in, a TP8 box is taken as NVLink, and the speculative
    # interval holds the other link too (impact/speculative.py), so it is wider than with the GPU known
    import os

    from driftwatch.facts import load_model_config
    from driftwatch.impact import ImpactContext, get_model
    from driftwatch.impact.roofline import Hardware
    assert Hardware.of(None, tp=8).interconnect == "nvlink" and not Hardware.of(None, tp=8).known
    m = load_model_config(os.path.join(os.path.dirname(__file__), "..", "..", "tools", "calibration_models",
                                       "deepseek-ai--DeepSeek-V3.json"))
    side = {"speculative.algorithm": "EAGLE", "speculative.topk": 1, "parallel.tensor": 8}

    def run(gpus):
        c = ImpactContext({**side, "speculative.steps": 1}, {**side, "speculative.steps": 3}, set(), set(), {}, {}, 1,
                          model_facts=m, baseline_model_facts=m, gpu_facts=gpus)
        return get_model("speculative_steps")("speculative.steps", 1, 3, c, {})

    known, unknown = run(gpu_facts(parse_gpu_option("H20x8"))), run(None)
    assert known.interval and unknown.interval
    assert unknown.interval[1] / unknown.interval[0] > known.interval[1] / known.interval[0]
    assert "GPU unknown" in unknown.detail and "pcie" not in unknown.detail.split("Details:")[0].lower()
