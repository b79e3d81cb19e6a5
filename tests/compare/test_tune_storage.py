"""A stored hv.tune study resumed (hierviz.compare.tune_storage): trials measured on one capture
are never mixed with a run on another (ir, target_device)."""

from __future__ import annotations

import pytest

import hierviz as hv
from tests.small_net import SCRIPTED_COMPILERS


def _tune(small, storage: str, model=None, **kwargs):
    default, inputs, _ = small
    return hv.tune(default if model is None else model, inputs, {"min_block_size": [1, 2]}, budget=1,
                   progress=False, pruning=False, measure={"warmup": 0, "iters": 2, "compilers": SCRIPTED_COMPILERS},
                   storage=storage, study_name="s", **kwargs)


def test_a_study_resumed_for_another_target_device_or_ir_is_refused(small, tmp_path) -> None:
    pytest.importorskip("optuna")
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    assert len(_tune(small, storage).trials) == 1
    with pytest.raises(hv.ConfigError) as cpu:
        _tune(small, storage, target_device="cpu")
    assert str(cpu.value) == (
        f"hv.tune: study 's' in {storage} was run with other settings (target_device was 'cuda', now 'cpu'): "
        "resume it with target_device='cuda' and the same base and space, or pass another study_name to start "
        "a new study.")
    with pytest.raises(hv.ConfigError, match=r"\(ir was 'dynamo', now 'torch_compile'\): resume it with "
                                             r"ir='dynamo' and the same base and space"):
        _tune(small, storage, ir="torch_compile")
    assert len(_tune(small, storage, target_device="cuda").trials) == 1  # the same run resumes


def test_a_graph_given_is_checked_as_it_was_lowered(small, tmp_path) -> None:
    """A captured graph keeps the device it was lowered for, whatever target_device says."""
    pytest.importorskip("optuna")
    model, inputs, _ = small
    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    _tune(small, storage)
    on_cpu = hv.capture(model, inputs, target_device="cpu")
    with pytest.raises(hv.ConfigError, match=r"\(target_device was 'cuda', now 'cpu'\)"):
        _tune(small, storage, model=on_cpu)
    assert len(_tune(small, storage, model=hv.capture(model, inputs)).trials) == 1


def test_a_study_kept_before_the_capture_was_checked_resumes_and_keeps_it(small, tmp_path) -> None:
    optuna = pytest.importorskip("optuna")
    from hierviz.compare.tune_storage import SETUP

    storage = f"sqlite:///{tmp_path / 'tune.db'}"
    _tune(small, storage)
    study = optuna.load_study(study_name="s", storage=storage)
    older = {k: v for k, v in study.user_attrs[SETUP].items() if k not in ("ir", "target_device")}
    study.set_user_attr(SETUP, older)
    assert len(_tune(small, storage, target_device="cpu").trials) == 1
    assert optuna.load_study(study_name="s", storage=storage).user_attrs[SETUP] == {
        **older, "ir": "dynamo", "target_device": "cpu"}
    with pytest.raises(hv.ConfigError, match=r"\(target_device was 'cpu', now 'cuda'\)"):
        _tune(small, storage)
