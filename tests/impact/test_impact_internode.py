"""Inter-node collectives (issue 35 item 1): --nnodes read as parallel.nodes, a TP group larger than one node
all-reduces over the network, a pipeline split across nodes pays a send/recv per boundary, and a layout that
cannot be known says so."""
import json
import os
from typing import Any

import pytest
from click.testing import CliRunner

from driftwatch.cli import cli
from driftwatch.engines.registry import get_engine
from driftwatch.facts import gpu_facts, load_model_config, parse_gpu_option
from driftwatch.impact import ImpactContext, calibration as cal, get_model
from driftwatch.impact.roofline import Hardware, Layout, Network, forward_time, layout_of
from driftwatch.impact.uncertainty import SLOWER, direction

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "calibration_models")
DSV3 = load_model_config(os.path.join(MODELS, "deepseek-ai--DeepSeek-V3.json"))
assert DSV3.layers and DSV3.hidden_size
LAYERS, HIDDEN = DSV3.layers, DSV3.hidden_size
TP, PP, DP, NODES = "parallel.tensor", "parallel.pipeline", "parallel.data", "parallel.nodes"


def gpus(value):
    return gpu_facts(parse_gpu_option(value))


def ctx(base, cur, m=DSV3, g=None, conc=1):
    return ImpactContext(base, cur, set(), set(), {}, {}, conc, model_facts=m, baseline_model_facts=m,
                         gpu_facts=g if g is not None else gpus("H200x8"))


def parallelism(name, base, cur, c):
    return get_model("parallelism")(name, base.get(name), cur.get(name), c, {})


# --- the concept, mapped in both engines ----------------------------------------------------------------

def test_nnodes_is_the_nodes_concept_in_sglang_and_in_the_vllm_releases_that_have_it():
    sglang: Any = get_engine("sglang")
    vllm: Any = get_engine("vllm")
    assert sglang.concept_bindings()["nnodes"].concept == NODES
    assert vllm.concept_bindings()["nnodes"].concept == NODES
    have = [v for v in vllm.catalogs.versions if "nnodes" in vllm.catalogs.load(v).by_field]
    assert "0.11.0" not in have and "0.12.0" in have and have[-1] == vllm.catalogs.versions[-1]
    assert all("nnodes" in sglang.catalogs.load(v).by_field for v in sglang.catalogs.versions)


# --- the layout ----------------------------------------------------------------------------------------

def test_gpus_per_node_from_the_flags_and_dp_attention_inside_the_tp_group():
    c = ctx({}, {TP: 16, NODES: 2})
    assert layout_of(c) == Layout(2, 8, 1, how=layout_of(c).how) and layout_of(c).tp_crosses(16)
    assert layout_of(ctx({}, {TP: 8, PP: 2, NODES: 2})).gpus_per_node == 8
    assert not layout_of(ctx({}, {TP: 8, PP: 2, NODES: 2})).tp_crosses(8)
    assert layout_of(ctx({}, {TP: 8, DP: 2, NODES: 2})).gpus_per_node == 8  # dp replicas: 16 GPUs
    dpa = layout_of(ctx({}, {TP: 16, DP: 16, NODES: 2, "parallel.dp_attention": True}))
    assert dpa.gpus_per_node == 8 and dpa.tp_crosses(16)  # DP attention's dp lives inside the TP group
    assert not layout_of(ctx({}, {TP: 8, NODES: 1})).tp_crosses(8)


def test_a_release_without_nnodes_spans_the_hosts_gpu_count_and_one_that_cannot_divide_is_unknown():
    ray = layout_of(ctx({}, {TP: 16}, g=gpus("H100x8")))  # vLLM < 0.12: Ray places the group, no flag
    assert ray.nodes == 2 and ray.gpus_per_node == 8 and "no --nnodes" in ray.how
    assert layout_of(ctx({}, {TP: 8}, g=gpus("H100x8"))).nodes == 1
    odd = layout_of(ctx({}, {TP: 6, NODES: 4}))
    assert odd.gpus_per_node is None and "nvidia-smi on each node" in odd.unknown
    assert "not a node count" in layout_of(ctx({}, {TP: 8, NODES: "runtime"})).unknown


def test_pipeline_boundaries_cross_nodes_once_per_node_change():
    assert Layout(2, 8, 2).network_boundaries(8) == 1  # PP 2 × TP 8 over two 8-GPU nodes
    assert Layout(2, 8, 4).network_boundaries(4) == 1  # four stages, two per node
    assert Layout(4, 4, 4).network_boundaries(4) == 3
    assert Layout(2, 4, 2).network_boundaries(8) == 1  # a TP group across nodes: every boundary does
    assert Layout(1, 8, 2).network_boundaries(4) == 0


# --- the roofline ---------------------------------------------------------------------------------------

def test_a_tp_group_across_nodes_all_reduces_at_the_networks_latency_and_nic_bandwidth():
    g = gpus("H200x8")
    inside = forward_time(DSV3, Hardware.of(g, tp=16, layout=Layout(1, 16, 1)), 1, 1)
    across = forward_time(DSV3, Hardware.of(g, tp=16, layout=Layout(2, 8, 1)), 1, 1)
    calls = 2 * LAYERS + 1
    assert across.allreduce > inside.allreduce
    payload = HIDDEN * 2 * 2 * 15 / 16 / (cal.NETWORK_LINK_GBS * 1e9)
    assert across.allreduce == pytest.approx(calls * (cal.ALLREDUCE_US["network"] * 1e-6 + payload))
    fast, slow = Network.ends()
    t_fast = forward_time(DSV3, Hardware(g.spec, 16, "nvlink", layout=Layout(2, 8, 1), network=fast), 1, 1)
    t_slow = forward_time(DSV3, Hardware(g.spec, 16, "nvlink", layout=Layout(2, 8, 1), network=slow), 1, 1)
    assert t_fast.allreduce < across.allreduce < t_slow.allreduce
    # a batch's payload goes over the NICs: the network term grows with the batch far more than NVLink's
    big_inside = forward_time(DSV3, Hardware.of(g, tp=16, layout=Layout(1, 16, 1)), 256, 1).allreduce
    big_across = forward_time(DSV3, Hardware.of(g, tp=16, layout=Layout(2, 8, 1)), 256, 1).allreduce
    assert big_across - across.allreduce > 10 * (big_inside - inside.allreduce)


def test_a_pipeline_across_nodes_pays_one_send_recv_per_boundary_and_a_draft_head_none():
    g = gpus("H200x8")
    one = forward_time(DSV3, Hardware.of(g, tp=8, layout=Layout(1, 8, 2)), 1, 1)
    two = forward_time(DSV3, Hardware.of(g, tp=8, layout=Layout(2, 8, 2)), 1, 1)
    assert one.sendrecv == 0 and two.sendrecv == pytest.approx(
        cal.NETWORK_SENDRECV_US * 1e-6 + HIDDEN * 2 / (cal.NETWORK_LINK_GBS * 1e9))
    assert two.total == pytest.approx(one.total + two.sendrecv) and "pipeline send/recv" in two.describe()
    assert one.allreduce == two.allreduce  # the TP group of 8 stays inside a node


def test_the_network_constants_are_ranges_holding_their_points():
    for point, (lo, hi) in ((cal.ALLREDUCE_US["network"], cal.NETWORK_ALLREDUCE_US_RANGE),
                            (cal.NETWORK_LINK_GBS, cal.NETWORK_LINK_GBS_RANGE),
                            (cal.NETWORK_SENDRECV_US, cal.NETWORK_SENDRECV_US_RANGE)):
        assert lo < point < hi and hi / lo >= 3  # wide: nothing was fitted
    assert cal.ALLREDUCE_US["network"] > cal.ALLREDUCE_US["nvlink"]


# --- the model --------------------------------------------------------------------------------------------

def test_tp_8_to_16_across_two_nodes_is_priced_slower_for_one_stream_with_the_fabrics_range():
    base, cur = {TP: 8, NODES: 1}, {TP: 16, NODES: 2}
    c = ctx(base, cur)
    est = parallelism(TP, base, cur, c)
    assert est.throughput_ratio is not None and est.throughput_ratio < 1 and direction(est.throughput_ratio, est.interval) == SLOWER
    lo, hi = est.interval
    assert lo < est.throughput_ratio < hi and hi / lo > 2  # the fabric's range, not a confident point
    assert "TP 16 across 2 nodes of 8 GPUs" in est.detail and "now cross the network" in est.detail
    assert f"{2 * LAYERS + 1} all-reduces per step" in est.detail and "NICs were not read" in est.detail
    nodes = parallelism(NODES, base, cur, c)  # the layout is priced once
    assert nodes.throughput_ratio == 1.0 and nodes.interval == (1.0, 1.0) and "counted with" in nodes.detail
    same_box = parallelism(TP, {TP: 8, NODES: 1}, {TP: 16, NODES: 1}, ctx({TP: 8, NODES: 1}, {TP: 16, NODES: 1},
                                                                          g=gpus("B200x16")))
    assert same_box.throughput_ratio > est.throughput_ratio  # the same TP 16 inside one box costs less


def test_the_same_tp_spread_over_more_nodes_is_priced_at_any_load():
    base, cur = {TP: 8, NODES: 1}, {TP: 8, NODES: 2}
    for conc in (1, 32):
        est = parallelism(NODES, base, cur, ctx(base, cur, g=gpus("H200x4"), conc=conc))
        assert est.throughput_ratio < 1 and direction(est.throughput_ratio, est.interval) == SLOWER
        assert "TP 8 across 2 nodes of 4 GPUs" in est.detail
        assert est.dimension == ("single-stream" if conc == 1 else "aggregate")
    back = parallelism(NODES, cur, base, ctx(cur, base, g=gpus("H200x4")))
    assert back.throughput_ratio > 1 and "no longer cross the network" in back.detail


def test_tp_change_across_nodes_at_load_and_without_facts_says_what_it_needs():
    base, cur = {TP: 8, NODES: 1}, {TP: 16, NODES: 2}
    loaded = parallelism(TP, base, cur, ctx(base, cur, conc=64))
    assert loaded.throughput_ratio is None and "KV pool per GPU" in loaded.detail and "cross the network" in loaded.detail
    bare = parallelism(TP, base, cur, ctx(base, cur, m=None))
    assert bare.throughput_ratio is None and "--model-config" in bare.detail and "now cross the network" in bare.detail
    # without facts an intra-node tp change keeps its prior
    assert parallelism(TP, {TP: 2}, {TP: 4}, ctx({TP: 2}, {TP: 4}, m=None, g=gpus("H200x8"))).throughput_ratio > 1


def test_pp2_tp8_to_tp16_over_the_same_two_nodes():
    base, cur = {TP: 8, PP: 2, NODES: 2}, {TP: 16, PP: 1, NODES: 2}
    c = ctx(base, cur)
    est = parallelism(TP, base, cur, c)
    assert est.throughput_ratio < 1 and "pipeline send/recv" in est.detail
    assert parallelism(PP, base, cur, c).detail.endswith("(one estimate of the whole layout, not twice)")


def test_an_unknown_layout_says_unknown_and_what_to_read():
    base, cur = {TP: 6, NODES: 1}, {TP: 6, NODES: 4}
    est = parallelism(NODES, base, cur, ctx(base, cur))
    assert est.throughput_ratio is None and "unknown" in est.detail and "nvidia-smi on each node" in est.detail


def test_gpus_needed_per_node_not_in_all():
    base, cur = {TP: 8, NODES: 1}, {TP: 16, NODES: 2}
    c = ImpactContext(base, cur, set(), set(), {}, {}, 1, gpus=8, model_facts=DSV3, baseline_model_facts=DSV3,
                      gpu_facts=gpus("H200x8"))
    assert parallelism(TP, base, cur, c).throughput_ratio is not None  # 8 per node on an 8-GPU host starts
    c.gpus = 4
    est = parallelism(TP, base, cur, c)
    assert est.throughput_ratio is None and "8 GPUs on each of 2 nodes" in est.detail and est.dimension == "stability"
    one = ImpactContext({TP: 8, NODES: 1}, {TP: 16, NODES: 1}, set(), set(), {}, {}, 1, gpus=8)
    assert "will not start" in parallelism(TP, one.baseline, one.current, one).detail


# --- end to end ------------------------------------------------------------------------------------------

UNIT = "[Service]\nExecStart=/opt/venv/bin/python3 -m sglang.launch_server --model-path /models/DeepSeek-V3 {}\n"


def test_compare_prices_a_move_to_two_nodes_and_calls_the_rendezvous_flags_harmless(tmp_path):
    base, cur = tmp_path / "base.service", tmp_path / "cur.service"
    base.write_text(UNIT.format("--tp-size 8"))
    cur.write_text(UNIT.format("--tp-size 16 --nnodes 2 --node-rank 1 --dist-init-addr 10.0.0.1:5000"))
    res = CliRunner().invoke(cli, ["compare", "--baseline", str(base), "--unit-file", str(cur), "--format", "json",
                                   "--model-config", os.path.join(MODELS, "deepseek-ai--DeepSeek-V3.json"),
                                   "--gpu", "H200x8", "--concurrency", "1"])
    assert res.exit_code == 1, res.output
    data = json.loads(res.output)
    findings = {f["key"]: f for f in data["findings"]}
    top = data["findings"][0]
    assert top["key"] == "tp_size" and top["impact"]["throughput_ratio"] < 1
    assert "across 2 nodes" in top["explanation"]
    assert findings["nnodes"]["impact"]["throughput_ratio"] == 1.0  # counted with --tp-size
    for key in ("node_rank", "dist_init_addr"):
        assert findings[key]["rule"] == "DW303" and findings[key]["impact"]["throughput_ratio"] == 1.0
    lo, hi = data["predicted_throughput_interval"]
    assert hi < 1 and lo < 0.5 * hi


def test_a_pipeline_change_prices_only_the_boundary_that_crosses_nodes():
    inside = parallelism(PP, {TP: 8, PP: 1, NODES: 1}, {TP: 8, PP: 2, NODES: 1},
                         ctx({TP: 8, PP: 1, NODES: 1}, {TP: 8, PP: 2, NODES: 1}))
    assert inside.throughput_ratio is None and "no sound number" in inside.detail  # as before: not modelled
    base, cur = {TP: 8, PP: 1, NODES: 2}, {TP: 8, PP: 2, NODES: 2}  # DP 2 → PP 2 over the same two nodes
    base[DP] = 2
    across = parallelism(PP, base, cur, ctx(base, cur))
    assert across.throughput_ratio is not None and across.throughput_ratio < 1
    assert "one send/recv per boundary" in across.detail and "0 → 1 pipeline stage boundaries" in across.detail
    lo, hi = across.interval
    assert lo < across.throughput_ratio < hi <= 1.05  # one send/recv per step: a small cost either way


def test_vllms_ray_executor_spans_nodes_with_nnodes_left_at_one():
    """vLLM ≥ 0.12 has --nnodes (default 1), but Ray, named or picked because the group exceeds the node's
    GPUs, places the group over other nodes: TP 16 on an 8-GPU host is a two-node server, not "will not start";
    one process per GPU (mp) on one node cannot."""
    ex = "parallel.executor"

    def on_8_gpus(base, cur):
        return ImpactContext(base, cur, set(), set(), {}, {}, 1, gpus=8, model_facts=DSV3,
                             baseline_model_facts=DSV3, gpu_facts=gpus("H100x8"))

    for backend in (None, "ray"):
        base, cur = {TP: 8, NODES: 1, ex: backend}, {TP: 16, NODES: 1, ex: backend}
        lay = layout_of(on_8_gpus(base, cur))
        assert (lay.nodes, lay.gpus_per_node) == (2, 8) and "Ray" in lay.how, backend
        est = parallelism(TP, base, cur, on_8_gpus(base, cur))
        assert "will not start" not in est.detail and "network" in est.detail, est.detail
    base, cur = {TP: 8, NODES: 1, ex: "mp"}, {TP: 16, NODES: 1, ex: "mp"}
    assert layout_of(on_8_gpus(base, cur)).nodes == 1
    assert "will not start" in parallelism(TP, base, cur, on_8_gpus(base, cur)).detail
    # within one node Ray changes nothing of the layout
    assert layout_of(on_8_gpus({}, {TP: 8, NODES: 1, ex: "ray"})).nodes == 1
