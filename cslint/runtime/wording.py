"""How the backends' own names for things are said in a runtime finding: the Python the user wrote, in the words
the static rules use, never an aten op, a dynamo stack slot or a guard's source syntax."""

from __future__ import annotations

import re

# The aten ops a step's Python reaches most, as a noun phrase for what the Python did (the overload is dropped).
_OP_WORDS = {
    "aten._local_scalar_dense": "a read of a tensor value into Python (`.item()`)",
    "aten._to_copy": "a conversion (`.to()`, `.double()`)",
    "aten.copy_": "a copy into a tensor (`.copy_()`)",
    "aten.index": "an index (`x[i]`)",
    "aten.index_put": "a write through an index (`x[i] = v`)",
    "aten.index_put_": "a write through an index (`x[i] = v`)",
    "aten.add": "an addition (`+`)",
    "aten.add_": "an in-place addition (`+=`, `.add_()`)",
    "aten.sub": "a subtraction (`-`)",
    "aten.sub_": "an in-place subtraction (`-=`, `.sub_()`)",
    "aten.mul": "a multiplication (`*`)",
    "aten.mul_": "an in-place multiplication (`*=`, `.mul_()`)",
    "aten.div": "a division (`/`)",
    "aten.div_": "an in-place division (`/=`, `.div_()`)",
    "aten.pow": "a power (`**`)",
    "aten.rsub": "a subtraction from a number (`n - x`)",
    "aten.addcmul_": "`.addcmul_()`",
    "aten.addcdiv_": "`.addcdiv_()`",
    "aten.lerp_": "`.lerp_()`",
    "aten.clamp": "a clamp (`.clamp()`)",
    "aten.lt": "a comparison (`<`)",
    "aten.le": "a comparison (`<=`)",
    "aten.gt": "a comparison (`>`)",
    "aten.ge": "a comparison (`>=`)",
    "aten.eq": "a comparison (`==`)",
    "aten.ne": "a comparison (`!=`)",
    "aten.view": "a reshape (`.view()`)",
    "aten._unsafe_view": "a reshape (`.view()`)",
    "aten.expand": "an expand (`.expand()`)",
    "aten.slice": "a slice (`x[a:b]`)",
    "aten.select": "an index (`x[i]`)",
    "aten.full": "a new tensor (`torch.full()`, `torch.tensor()`)",
    "aten.scalar_tensor": "a tensor made from a number (`torch.tensor(n)`)",
    "aten.equal": "a comparison of whole tensors (`torch.equal()`)",
    "aten.is_nonzero": "a tensor's truth value (`bool(t)`)",
}


def op_words(op: str) -> str:
    """`aten.mul.Tensor` -> "a multiplication (`*`)"; an op not in the table by its public torch name."""
    parts = op.split(".")
    base = ".".join(parts[:2]) if len(parts) > 2 else op
    if base in _OP_WORDS:
        return _OP_WORDS[base]
    name = parts[1] if len(parts) > 1 else op
    return f"`torch.{name}()`" if name and not name.startswith("_") else "an op the step runs"


def title_and_reason(title: str, reason: str) -> str:
    """`Data-dependent branching` with reason `Data-dependent branching` is said once."""
    reason = reason.strip()
    if not reason or reason.rstrip(".").lower() == title.strip().rstrip(".").lower():
        return title
    return f"{title}: {reason}"


_FRAME_SOURCE = re.compile(r"\b[LG]\['(\w+)'\]")


def guard_expression(guard: str) -> str | None:
    """The user's expression a failed dynamo guard tests (`L['self'].calls == 0` -> `self.calls == 0`), or None
    when it tests a value dynamo keeps out of the user's sight (`___stack0 == 4.34`, `___check_obj_id(...)`)."""
    expression = _FRAME_SOURCE.sub(r"\1", guard.strip())
    return None if "___" in expression or not expression else expression
