"""The Explorer's Blockers tab: it lists Partition.blockers() of the shown settings; clicking a
row applies its what-if (the diagram and counts then show exactly what that row said), and
"back" restores the setting from before the first what-if."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.widget import controls as ctl
from tests.partitioner.test_blockers import Blocked


@pytest.fixture()
def explorer() -> hv.Explorer:
    gm = hv.capture(Blocked(), (torch.randn(2, 8),))
    ex = hv.explore(gm, min_block_size=3, torch_executed_ops={"aten.tanh.default"}, debounce=0)
    ex.tabs.selected_index = ctl.tab_index("blockers_box")
    return ex


def test_the_tab_lists_the_blockers(explorer) -> None:
    table = explorer.partition.blockers()
    assert explorer.blockers.drop(columns="config").equals(table.drop(columns="config"))
    labels = [label for label, _ in explorer.blockers_tab.picker.options]
    assert len(labels) == len(table)
    assert labels[0].startswith(f"1. {table.iloc[0].change}")
    for label, row in zip(labels, table.itertuples()):  # what each gives in the report's words
        saved = int(row.subgraphs_saved)
        assert (f"{saved} subgraph(s) fewer" if saved >= 0 else f"{-saved} subgraph(s) more") in label
        assert f"({row.verdict}, {row.kind}: " in label  # a trade-off is labelled one
        assert "subgraphs saved" not in label
    assert "<table" in explorer.blockers_tab.panel.value and table.iloc[0].op in explorer.blockers_tab.panel.value


@pytest.mark.parametrize("row", range(4))
def test_clicking_a_row_applies_it_and_back_restores(explorer, row) -> None:
    before = explorer.partition
    table = explorer.blockers
    picked = table.iloc[row]
    explorer.blockers_tab.picker.value = row  # the user's click
    now = explorer.partition
    assert now.stats["subgraphs"] == picked.subgraphs_if_fixed
    assert now.stats["accelerated_ops"] - before.stats["accelerated_ops"] == picked.accelerated_ops_gained
    assert f"{before.stats['subgraphs']} \u2192 {now.stats['subgraphs']}" in explorer.blockers_tab.banner.value
    assert (f"<b>{now.stats['subgraphs']}</b> "
            f"({now.stats['acc_subgraphs']} accelerated)") in explorer.panels["stats"].value
    assert not explorer.blockers_tab.back.disabled and explorer.errors == {}
    explorer.blockers_tab.back.click()
    assert explorer.config == before.config and explorer.partition.stats == before.stats
    assert explorer.blockers_tab.back.disabled and explorer.blockers_tab.banner.value == ""


def test_two_what_ifs_then_back_returns_to_the_first_setting(explorer) -> None:
    first = explorer.config
    explorer.apply_blocker(0)
    explorer.apply_blocker(0)  # the next blocker of the what-if's partition
    assert explorer.config != first
    assert explorer.undo_what_if() == first and explorer.config == first
    with pytest.raises(hv.ConfigError, match="row number"):
        explorer.apply_blocker(99)


def test_the_picker_has_the_tab_s_whole_width(explorer) -> None:
    """A <select> cuts each option at its own width: the picker gets a row of its own, the tab's
    full width, with no description or button beside it taking room from the entries."""
    tab = explorer.blockers_tab
    assert tab.picker in tab.children
    assert tab.picker.layout.width == "100%" and tab.picker.description == ""
    assert tab.back in tab.children[tab.children.index(tab.picker) - 1].children  # back sits above the entries
