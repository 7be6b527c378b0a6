"""``worldforge runs resume``: finish a run by asking its service the recorded request again.

:func:`worldforge.workspace.resume.plan_resume` says whether the run may resume and returns the
request it recorded; this module maps the run's kind to the service that answers it and calls that
service in this process with the run's id, so the service reopens the run and reuses its finished
items. A new resumable kind is one entry in :data:`RESUMERS`. Exit codes follow the command the run
came from: 0 when the run completes, 1 when the benchmark's budget gate fails, and the error's own
code when the service fails again.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from worldforge.core.errors import WorldForgeError
from worldforge.workspace.resume import ResumePlan


def resume_evaluation(plan: ResumePlan) -> int:
    """Finish an ``eval`` run: :func:`~worldforge.evaluation.runner.evaluate` with its request."""
    from worldforge.evaluation.runner import EvaluationRequest, evaluate

    request = EvaluationRequest.from_record(
        plan.request, workspace=plan.workspace, resume_run=plan.run_id, argv=plan.argv
    )
    outcome = evaluate(request)
    print(f"run {outcome.run_id} completed: {outcome.html_path}", file=sys.stderr)
    return 0


def resume_stage(plan: ResumePlan) -> int:
    """Finish a ``pcg stage`` run with its :class:`~worldforge.pcg.competition.orchestrate.StageRequest`."""
    from worldforge.cli.pcg_cmd import run_stage_request
    from worldforge.pcg.competition.orchestrate import StageRequest

    run_stage_request(StageRequest.from_record(plan.request), plan.workspace, plan.argv, plan.run_id)
    return 0


def resume_benchmark(plan: ResumePlan) -> int:
    """Finish a ``benchmark`` run; 1 when its budget gate fails, as ``benchmark`` exits."""
    from worldforge.benchmark.service import BenchmarkRequest, run_benchmark
    from worldforge.cli.benchmark_cmd import print_report

    report = run_benchmark(BenchmarkRequest.from_record(plan.request), plan.workspace, plan.argv, plan.run_id)
    return 0 if print_report(report, "text") else 1


#: Run kind -> the function that finishes a run of that kind from its recorded request (the kinds
#: are the services' ``EVALUATION_KIND``, ``STAGE_KIND`` and ``BENCHMARK_KIND``, spelled out so that
#: importing this table loads none of the services).
RESUMERS: dict[str, Callable[[ResumePlan], int]] = {
    "evaluation": resume_evaluation,
    "pcg-stage": resume_stage,
    "benchmark": resume_benchmark,
}


def resume_recorded(plan: ResumePlan) -> int:
    """Finish the run ``plan`` describes; ``WorldForgeError`` for a kind that does not resume."""
    resumer = RESUMERS.get(plan.kind)
    if resumer is None:
        raise WorldForgeError(f"resume {plan.run_id}: {plan.kind!r} runs do not resume; rerun the command.")
    return resumer(plan)


__all__ = ["RESUMERS", "resume_benchmark", "resume_evaluation", "resume_recorded", "resume_stage"]
