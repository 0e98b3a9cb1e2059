"""What one function's inference asks about the rest of the project (`project_oracle.ProjectOracle`
answers it, by analysing other functions with the inference itself; a kept analysis replays the answers:
reuse.py). A protocol, so the inference does not import the oracle that runs it."""

from __future__ import annotations

from typing import Protocol

from cslint.analysis.index import ClassInfo, FunctionInfo
from cslint.analysis.kinds import Kind
from cslint.analysis.project import Project


class Oracle(Protocol):
    project: Project

    def return_kind(self, func: FunctionInfo) -> Kind | None: ...

    def call_return(self, qualname: str, given: dict[str, Kind]) -> Kind | None: ...

    def self_kind(self, cls: ClassInfo) -> Kind: ...

    def state_entries(self, cls: ClassInfo) -> dict[str, Kind]: ...

    def group_entries(self, cls: ClassInfo) -> frozenset[str]: ...

    def instance_kind(self, cls: ClassInfo) -> Kind: ...

    def function_table(self, cls_name: str) -> Kind | None: ...

    def attributes(self, cls_name: str) -> dict[str, Kind]: ...
