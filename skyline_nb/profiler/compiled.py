"""Whether the user's step ran code compiled by ``torch.compile`` or TorchScript, and what that
means for the report.

The headline and the samples time the step as the user runs it: compiled, fused kernels and
all. The breakdown and the memory categories come from instrumented iterations under Python
dispatch modes, and under any dispatch mode a compiled module runs its ops one at a time,
without compilation (checked on torch 2.13: ``aten.t``, ``aten.addmm``, ``aten.gelu`` reach the
mode). So the per-op times describe the eager step, scaled to the compiled one, and what
compilation saves in memory shows as a negative "other". A user must be told, not left to
wonder why their fused model shows unfused ops.

Detected from Dynamo's own counters (graphs compiled while the trial was built and warmed up:
a fresh model recompiles, whether the user compiled the model or the step) and from compiled
modules in the model; Dynamo is never imported here (a user who never compiled has not).

A TorchScript module (``torch.jit.script`` or ``torch.jit.trace``) runs its submodules inside
TorchScript's interpreter, where no module hook fires: the hooks see the scripted module called
from Python, and its ops, but none of the modules inside it. Its ops then show under it as a
whole, and its modules are named by the class they were made from (``original_name``), not
``RecursiveScriptModule``.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from torch import jit, nn

from skyline_nb.profiler.memory import user_path

# What a compiled module warns at each call while global module hooks (the profiler's) exist.
COMPILED_MODULE_WARNING = r"Using `torch\.compile\(module\)` when there are global hooks"
COMPILED = (
    "the step runs code compiled by torch.compile: its time, the samples and the peak are the "
    "compiled step's, but the per-op breakdown and what was alive at the peak come from its "
    "ops run one at a time, as PyTorch runs a compiled model under a profiler's dispatch mode: "
    "fused kernels show as their separate ops, op times are scaled to the compiled step, and "
    "'other' can be negative by what compilation saves"
)


def quiet_compiled_module_warning() -> None:
    """Ignore that warning from the first instrumented run on: it is about our hooks, not the
    user's to read. The filter is added where it is missing only (once, unless the user's
    filters were reset): a ``warnings.catch_warnings()`` around each run reset Python's
    once-per-place registry at every run, so a warning the user's step raises showed at each
    (9 times in one profile, where their loop shows it once)."""
    for action, message, *_ in warnings.filters:
        if action == "ignore" and getattr(message, "pattern", None) == COMPILED_MODULE_WARNING:
            return
    warnings.filterwarnings("ignore", message=COMPILED_MODULE_WARNING)


def compiled_graphs() -> int:
    """How many graphs Dynamo has compiled in this process so far (0 if it was never used)."""
    dynamo_utils = sys.modules.get("torch._dynamo.utils")
    if dynamo_utils is None:
        return 0
    return int(dynamo_utils.counters["stats"]["unique_graphs"])


def compiled_warning(model: Any, graphs_before: int) -> str | None:
    """``COMPILED`` when Dynamo compiled a graph since ``graphs_before`` or ``model`` holds a
    compiled module, else None."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    optimized = getattr(eval_frame, "OptimizedModule", None)
    modules = model.modules() if hasattr(model, "modules") else []
    holds = optimized is not None and any(isinstance(m, optimized) for m in modules)
    return COMPILED if holds or compiled_graphs() > graphs_before else None


def class_name(module: nn.Module) -> str:
    """The name of the class the user wrote: a TorchScript module's type is
    ``RecursiveScriptModule`` or ``TracedModule``, its ``original_name`` the class scripted."""
    if isinstance(module, jit.ScriptModule):
        return str(getattr(module, "original_name", "") or type(module).__name__)
    return type(module).__name__


def scripted_warning(model: nn.Module) -> str | None:
    """What the report says of TorchScript modules that hold others (module doc), or None."""
    scripted = [user_path(name) for name, module in model.named_modules()
                if isinstance(module, jit.ScriptModule) and next(module.children(), None)]
    outer = [name for name in scripted
             if not any(other != name and (other == "" or name.startswith(f"{other}."))
                        for other in scripted)]
    if not outer:
        return None
    if outer == [""]:
        where = "the model is"
    else:
        many = len(outer) > 1
        names = ", ".join(f"'{name}'" for name in outer)
        where = f"the module{'s' if many else ''} {names} {'are' if many else 'is'}"
    return (f"{where} TorchScript (torch.jit.script or torch.jit.trace): the modules inside it "
            "run in TorchScript, where PyTorch's module hooks do not reach, so the time and "
            "activations of their ops show under it as a whole; weights and gradients still go "
            "to each module. To see its modules, profile the model before scripting it")
