"""trt_settings values are checked before anything converts, against a table of
CompilationSettings' fields that hierviz keeps without importing torch_tensorrt; the table is
checked here against the installed CompilationSettings, so it cannot drift."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing

import pytest

import hierviz as hv
from hierviz import trt
from hierviz.trt import compilation_settings as cs

needs_trt = pytest.mark.skipif(not trt.available(), reason=f"torch_tensorrt unusable: {trt.info().error}")


@pytest.mark.parametrize(("settings", "said"), [
    ({"optimization_level": "high"}, "trt_settings['optimization_level'] = 'high': an int from 0 to 5"),
    ({"optimization_level": 99}, "trt_settings['optimization_level'] = 99: an int from 0 to 5"),
    ({"optimization_level": 2.0}, "trt_settings['optimization_level'] = 2.0: an int from 0 to 5"),
    ({"workspace_size": -5}, "trt_settings['workspace_size'] = -5: an int >= 0"),
    ({"max_aux_streams": -1}, "trt_settings['max_aux_streams'] = -1: None or an int >= 0"),
    ({"num_avg_timing_iters": -2}, "trt_settings['num_avg_timing_iters'] = -2: an int >= 0"),
    ({"dla_sram_size": 0}, "trt_settings['dla_sram_size'] = 0: an int >= 1"),
    ({"version_compatible": 1}, "trt_settings['version_compatible'] = 1: True or False"),
    ({"sparse_weights": "yes"}, "trt_settings['sparse_weights'] = 'yes': True or False"),
    ({"engine_capability": "fast"}, "trt_settings['engine_capability'] = 'fast': an EngineCapability"),
    ({"tiling_optimization_level": "max"}, "trt_settings['tiling_optimization_level'] = 'max': one of 'none', "
                                           "'fast', 'moderate', 'full'"),
    ({"l2_limit_for_tiling": -2}, "trt_settings['l2_limit_for_tiling'] = -2: an int >= -1"),
    ({"timing_cache_path": 3}, "trt_settings['timing_cache_path'] = 3: a file path"),
    ({"device": "cpu"}, "TensorRT builds for CUDA devices"),
])
def test_a_bad_value_names_the_field_the_value_and_what_is_allowed(settings, said) -> None:
    with pytest.raises(hv.ConfigError) as caught:
        trt.check_settings(settings)
    assert said in str(caught.value)


def test_every_bad_value_is_named_at_once_and_the_default_is_said() -> None:
    with pytest.raises(hv.ConfigError) as caught:
        trt.check_settings({"optimization_level": "high", "workspace_size": -5})
    text = str(caught.value)
    assert "'optimization_level'" in text and "'workspace_size'" in text
    assert "TensorRT's default 3" in text


@pytest.mark.parametrize("settings", [
    None, {}, {"optimization_level": 0}, {"optimization_level": 5}, {"workspace_size": 1 << 30},
    {"max_aux_streams": None}, {"max_aux_streams": 0}, {"version_compatible": True},
    {"engine_capability": "standard"}, {"tiling_optimization_level": "fast"}, {"l2_limit_for_tiling": -1},
    {"timing_cache_path": "/tmp/cache.bin"}, {"device": "cuda:1"}, {"device": 0},
])
def test_good_values_pass(settings) -> None:
    assert trt.check_settings(settings) is None


def test_names_are_checked_too_saying_where_they_belong() -> None:
    with pytest.raises(hv.ConfigError, match="'min_block_size' is a partitioning setting"):
        trt.check_settings({"min_block_size": 3})
    with pytest.raises(hv.ConfigError, match="did you mean optimization_level"):
        trt.check_settings({"optimisation_level": 3})
    with pytest.raises(hv.ConfigError, match="must be a dict"):
        trt.check_settings(["optimization_level"])  # type: ignore[arg-type]


def test_the_check_does_not_import_torch_tensorrt() -> None:
    code = ("import sys; from hierviz.trt.compilation_settings import check_settings, conversion_fields\n"
            "check_settings({'optimization_level': 4, 'workspace_size': 0, 'engine_capability': 'SAFETY'})\n"
            "conversion_fields({'optimization_level': 4})\n"
            "print('torch_tensorrt' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@needs_trt
def test_conversion_settings_checks_the_same_values() -> None:
    with pytest.raises(hv.ConfigError, match=r"trt_settings\['optimization_level'\] = 99"):
        trt.conversion_settings({"optimization_level": 99})
    made = trt.conversion_settings({"engine_capability": "safety", "timing_cache_path": "/tmp/x.bin"})
    assert made.engine_capability.name == "SAFETY"


@needs_trt
def test_the_table_matches_the_installed_compilation_settings() -> None:
    from torch_tensorrt.dynamo import CompilationSettings

    fields = {f.name: f for f in dataclasses.fields(CompilationSettings)}
    hints = typing.get_type_hints(CompilationSettings)
    assert set(cs.FIELDS) == cs.CONVERSION_FIELDS
    assert cs.known_fields() == set(fields)  # every field is a conversion one or says where it belongs
    defaults = trt.default_settings()
    for name, rule in cs.FIELDS.items():
        if name == "device":
            continue
        default = getattr(defaults, name)
        assert rule.default == (default.name if name == "engine_capability" else default), name
        assert rule.accepts(default), name  # Torch-TensorRT's own default passes the check
        kind = hints[name]
        allowed = {t for t in typing.get_args(kind)} or {kind}
        assert set(rule.types) == {t.__name__ for t in allowed}, name
