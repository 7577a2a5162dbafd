"""One typed description of a deployment that every part reads (see model.Deployment, table.SETTINGS)."""

from doctor.deployment.build import (DeploymentError, from_argv, from_profile, launch_in, read_engine_args,
                                     read_options, settings_of, split_command)
from doctor.deployment.launcher import LAUNCHERS, Launcher
from doctor.deployment.model import Deployment, Endpoint, Flag, Settings
from doctor.deployment.table import SettingError

__all__ = ["LAUNCHERS", "Deployment", "DeploymentError", "Endpoint", "Flag", "Launcher", "SettingError", "Settings",
           "from_argv", "from_profile", "launch_in", "read_engine_args", "read_options", "settings_of", "split_command"]
