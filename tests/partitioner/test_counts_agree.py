"""The counts agree (issue 37): nodes, compute ops and supported ops are defined once
(hierviz.partitioner.counts) and every surface (the repr, nodes(), the report, the views' titles
and auto's note, the HTML report, the explorer's panel, the engine notes, the README) says the
same figure in the same words, on two models from outside the zoo: transformers' Mixtral (tiny
config, random weights) and torchvision's ShuffleNetV2."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import hierviz as hv
from hierviz.partitioner import counts

ROOT = Path(__file__).resolve().parents[2]


def mixtral():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                     num_attention_heads=2, num_key_value_heads=1, num_local_experts=2,
                                     num_experts_per_tok=1, max_position_embeddings=32, use_cache=False)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = transformers.MixtralForCausalLM(cfg).eval()
    return model, (torch.randint(0, 64, (1, 6), generator=torch.Generator().manual_seed(0)),)


def shufflenet():
    models = pytest.importorskip("torchvision.models")
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = models.shufflenet_v2_x0_5().eval()
    return model, (torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0)),)


@pytest.fixture(scope="module", params=[mixtral, shufflenet], ids=["mixtral", "shufflenet"])
def part(request):
    model, x = request.param()
    return hv.partition(model, x)


def figures(p):
    """The counts as nodes() gives them, row by row."""
    rows = p.nodes()
    graph = rows.backend == "graph"
    compute = rows.compute.astype(bool)
    return {"nodes": int((~graph).sum()), "graph": int(graph.sum()), "compute_ops": int(compute.sum()),
            "supported_ops": int((compute & (rows.eligible_backend != "torch")).sum()),
            "drawn": int((rows.kind != "get_attr").sum())}


def test_nodes_table_and_stats_agree(part):
    f, s = figures(part), part.stats
    assert f["graph"] > 0  # inputs, weights, output: rows of nodes(), not nodes
    assert (s["nodes"], s["compute_ops"], s["supported_ops"]) == (f["nodes"], f["compute_ops"], f["supported_ops"])
    assert repr(part).startswith(f"<hv.Partition {f['nodes']:,} nodes (+{f['graph']:,} graph inputs/weights/output), ")


def test_report_says_the_same_counts(part):
    f = figures(part)
    text = part.report(what_to_change=False)
    assert (f"The graph consists of {f['compute_ops']} Total Operators, of which {f['supported_ops']} operators are "
            "supported") in text
    assert (f"({f['nodes']:,} nodes: {f['compute_ops']:,} compute ops, of which {f['supported_ops']:,} supported ops, "
            f"and {f['nodes'] - f['compute_ops']:,} getitem/view nodes") in text


def test_views_html_and_explorer_say_the_same_counts(part, tmp_path):
    from hierviz.widget import panels

    f = figures(part)
    title = f"{f['nodes']:,} nodes, "
    for view in ("collapsed", "modules"):
        assert title in part.render(view=view).source
    line = f"{f['nodes']:,} nodes, {f['compute_ops']:,} compute ops, {f['supported_ops']:,} supported ops"
    assert line in part.save(tmp_path / "x.html", view="collapsed").read_text()
    assert line in panels.stats_html(part)
    note = part.render(max_nodes=20).info["auto"]
    assert note.startswith(f"auto chose the module view: {f['drawn']:,} drawn nodes (the nodes, the graph's inputs and "
                           "output) > max_nodes=20")


def test_backend_that_takes_no_ops_is_named_in_the_label(part):
    assert "tensorrt>inductor(no ops) mbs=5" in repr(part)
    assert "tensorrt>inductor(no ops)" in part.render(view="collapsed").source.replace("&gt;", ">")
    taking = part.config.replace(support={"inductor": hv.support.inductor()})
    assert taking.label().startswith("tensorrt>inductor mbs=5")


def test_fast_engine_is_labelled_tensorrt_and_counts_in_its_own_words(part):
    from hierviz import trt

    if not trt.available():
        pytest.skip("engine='fast' needs torch_tensorrt")
    fast = hv.partition(part.graph, engine="fast", min_block_size=100_000)
    assert repr(fast).endswith("tensorrt mbs=100000, engine=fast>") and "inductor" not in fast.config.label()
    note = next(n for n in fast.notes if "min_block_size 100000" in n)
    assert "supported nodes (torch_tensorrt.compile's count, getitem and views included)" in note
    assert "supported op" not in note  # 'supported ops' is hierviz's count, said in the report


def test_readme_defines_each_count():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Counts", 1)[1].split("\n## ", 1)[0]
    for word in counts.WORDS.values():
        assert f"**{word}**" in section, word
    assert "supported nodes" in section
