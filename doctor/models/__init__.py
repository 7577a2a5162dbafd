"""Model registry and config.json reader: the shape of a checkpoint, as data."""

from doctor.models.config_reader import read_config_dir, spec_from_config
from doctor.models.errors import ModelConfigError
from doctor.models.params import active_parameters, count_parameters
from doctor.models.registry import get_model, known_models, registry
from doctor.models.spec import ModelSpec

__all__ = ["ModelSpec", "ModelConfigError", "get_model", "known_models", "registry", "read_config_dir",
           "spec_from_config", "count_parameters", "active_parameters"]
