"""Optional config values with readable ``--help`` metavars.

``int | None`` alone shows as ``{None}|INT`` in tyro's help; these say what to pass.
"""

from __future__ import annotations

from typing import Annotated

import tyro

OptInt = Annotated[int | None, tyro.conf.arg(metavar="INT|None")]
OptBool = Annotated[bool | None, tyro.conf.arg(metavar="{True,False,None}")]
OptFloat = Annotated[float | None, tyro.conf.arg(metavar="FLOAT|None")]
OptInts = Annotated[list[int] | None, tyro.conf.arg(metavar="INT [INT ...]|None")]
OptFile = Annotated[str | None, tyro.conf.arg(metavar="FILE", help_behavior_hint="(optional)")]
OptDir = Annotated[str | None, tyro.conf.arg(metavar="DIR", help_behavior_hint="(optional)")]
