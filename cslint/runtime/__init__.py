"""The runtime checker: run a user's step under static-graph backends built from PyTorch's machinery.

Importing this package does not import torch; only the child process that runs user code does.
"""

from cslint.runtime.api import INSTALL_HINT, check, torch_available
from cslint.runtime.findings import RuntimeFinding, RuntimeReport
from cslint.runtime.step_factory import OptimizerStep, Step

__all__ = ["INSTALL_HINT", "OptimizerStep", "RuntimeFinding", "RuntimeReport", "Step", "check", "torch_available"]
