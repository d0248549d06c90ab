"""The steps a runtime's verbose start-up trace says it began and returned from, as data read from the code that
prints them (s29): where such a trace ends in a step begun that never returned, start-up stopped inside that step
(``rules_set_up.set_up_step_unreturned``).

Each entry: a name, the runtime, the pattern of a step begun (its ``step`` group names the step; other groups keep
its facts), the pattern of its return (a ``step`` group, where there is one, must name the same step), what the
step does, and where the runtime prints it. ``parsers/start_up`` makes each line a ``server_up`` event whose
``where`` is ``set-up step begun <name>`` or ``set-up step returned <name>``.

- Open MPI's selection of its transports in MPI_Init, with ``--mca btl_base_verbose 100`` (or ``pml_``, ``mtl_``):
  opal/mca/btl/base/btl_base_select.c ``select: initializing %s component %s``, then ``select: init of component %s
  returned success`` (or ``failure``) once the component's init returns (dv34-009: openib's init began and the
  log ends there, the job never past MPI_Init).
- The launch state machine of mpirun (ORTE, orte/mca/state/base/state_base_fns.c) and of PRRTE (Open MPI 5's
  ``prte``/``prterun``, src/mca/state/base/state_base_fns.c), with ``--mca state_base_verbose 5``: ``ACTIVATE JOB
  <job> STATE <STATE> AT <file>:<line>``; a ``PENDING`` state (``PENDING ALLOCATION``, ``PENDING DAEMON LAUNCH``)
  is a step begun, any later state of the same job its return (dv34-010: the daemons' launch over ssh began and
  no state followed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tracekit.parsers import any_of


@dataclass(frozen=True)
class Step:
    name: str
    runtime: str
    begun: str  # a step begun; ``step`` names it
    returned: str  # its return (a line that is no step begun); ``step``, where it has one, names the step
    does: str  # what start-up does in it, with the begun line's groups: ``{step}``, ``{framework}``
    source: str


STEPS: tuple[Step, ...] = (
    Step("ompi_component_init", "Open MPI",
         r"\bselect: initializing (?P<framework>\w+) component (?P<step>\w+)",
         r"\bselect: init of component (?P<step>\w+) returned\b",
         "MPI_Init's initialisation of its {framework} component {step} (the transport it selects)",
         "open-mpi/ompi opal/mca/btl/base/btl_base_select.c mca_btl_base_select (opal_output_verbose 10)"),
    Step("mpi_launch_state", "mpirun (ORTE/PRRTE)",
         r"\bACTIVATE JOB (?P<job>\S+) STATE (?P<step>PENDING [A-Z ]+?) AT\b",
         # (read after ``begun``: a state that is not PENDING; polars' regex has no look-ahead)
         r"\bACTIVATE JOB (?P<job>\S+) STATE [A-Z]",
         "the launcher's step {step} (its job's state machine: allocating the nodes, launching and wiring up "
         "its daemons on them, before any rank runs)",
         "open-mpi/ompi orte/mca/state/base/state_base_fns.c orte_state_base_activate_job_state; openpmix/prrte "
         "src/mca/state/base/state_base_fns.c prte_state_base_activate_job_state (`ACTIVATE JOB %s STATE %s AT "
         "%s:%d`)"),
)

#: any step line, begun or returned
ANY = any_of(*(p for s in STEPS for p in (s.begun, s.returned)))
BEGUN = "set-up step begun "
RETURNED = "set-up step returned "


def read(text: str) -> tuple[Step, bool, dict] | None:
    """The step a line begins or returns from: (its entry, whether it is the return, its named groups)."""
    for s in STEPS:
        if hit := re.search(s.begun, text):
            return s, False, {k: v for k, v in hit.groupdict().items() if v}
        if hit := re.search(s.returned, text):
            return s, True, {k: v for k, v in hit.groupdict().items() if v}
    return None
