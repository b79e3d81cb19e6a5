"""The settings of a partition: `Config` (config.py), the declaration of each setting
(setting.py), their values (setting_values.py), the engine table (engine_table.py) and the
rules of torch_tensorrt.compile's own partitioners (compile_rules.py)."""
