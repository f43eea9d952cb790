"""The matrix as a Markdown table: one row per client release, one column per broker."""

from __future__ import annotations

from collections.abc import Sequence

from kip714_dev.compat.clients import ClientSpec
from kip714_dev.compat.matrix import BrokerRun

LEGEND = (
    "Cell: metric names landed (producer and consumer together), pushes landed, and `T` when a terminating "
    "push landed on close (`T:p`/`T:c`: from the producer/consumer only); `none`: the client ran but no push "
    "landed; `fail`: the client did not run."
)


def cell(run: BrokerRun, spec: ClientSpec) -> str:
    outcome = run.clients.get(spec)
    if run.error:
        return "-"
    if outcome is None or not outcome.ok:
        return "fail"
    landed = run.landed.get(spec)
    if landed is None or landed.pushes == 0:
        return "none"
    roles = landed.terminating_roles
    mark = (
        ""
        if not roles
        else " T"
        if roles >= {"producer", "consumer"}
        else f" T:{''.join(sorted(r[0] for r in roles))}"
    )
    return f"{len(landed.metrics)} m / {landed.pushes} p{mark}"


def render(runs: Sequence[BrokerRun], specs: Sequence[ClientSpec]) -> str:
    """The table, then per-broker rows: quarantined records, source port given, too-large answers."""
    head = ["client \\ broker", *(run.version for run in runs)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for spec in specs:
        lines.append(
            "| " + " | ".join([_client_label(runs, spec), *(cell(run, spec) for run in runs)]) + " |"
        )
    lines.append("| quarantined records | " + " | ".join(_quarantined(run) for run in runs) + " |")
    lines.append("| source port in headers | " + " | ".join(_ports(run) for run in runs) + " |")
    lines.append(
        "| too large, gzip (decompressed 1.5 MiB) | "
        + " | ".join(run.too_large.compressed if run.too_large else "-" for run in runs)
        + " |"
    )
    lines.append(
        "| too large, uncompressed 1.5 MiB | "
        + " | ".join(run.too_large.uncompressed if run.too_large else "-" for run in runs)
        + " |"
    )
    lines.append("| broker run (s) | " + " | ".join(f"{run.seconds:.0f}" for run in runs) + " |")
    errors = [f"- {run.version}: {run.error}" for run in runs if run.error]
    failures = sorted(
        {f"- {o.spec.label}: {o.detail}" for run in runs for o in run.clients.values() if not o.ok}
    )
    return "\n".join(
        [*lines, "", LEGEND, *(["", *errors] if errors else []), *(["", *failures] if failures else [])]
    )


def _client_label(runs: Sequence[BrokerRun], spec: ClientSpec) -> str:
    reported = {o.detail for run in runs if (o := run.clients.get(spec)) is not None and o.ok}
    return spec.label + (
        f" ({', '.join(sorted(reported))})" if spec.library == "librdkafka" and reported else ""
    )


def _quarantined(run: BrokerRun) -> str:
    return "-" if run.error else f"{run.quarantined} of {run.records}"


def _ports(run: BrokerRun) -> str:
    if run.error:
        return "-"
    ports = {port for landed in run.landed.values() for port in landed.source_ports}
    if not ports:
        return "-"
    return "empty" if ports == {""} else "yes" if "" not in ports else "mixed"


def metrics_section(runs: Sequence[BrokerRun], specs: Sequence[ClientSpec]) -> str:
    """Per client release, the metric names it pushed (on the newest broker where it landed): counts by
    role, and for each release the names added or gone against the previous release of its library."""
    lines = [
        "| client | producer | consumer | other | against the previous release |",
        "|---|---|---|---|---|",
    ]
    previous: dict[str, set[str]] = {}
    for spec in specs:
        names: set[str] = set()
        for run in reversed(runs):
            landed = run.landed.get(spec)
            if landed is not None and landed.metrics:
                names = landed.metrics
                break
        producer = sum(name.startswith("org.apache.kafka.producer.") for name in names)
        consumer = sum(name.startswith("org.apache.kafka.consumer.") for name in names)
        before = previous.get(spec.library)
        change = "-" if before is None or not names else _change(before, names)
        lines.append(
            f"| {spec.label} | {producer} | {consumer} | {len(names) - producer - consumer} | {change} |"
        )
        if names:
            previous[spec.library] = names
    return "\n".join(lines)


def _change(before: set[str], after: set[str]) -> str:
    added, gone = sorted(after - before), sorted(before - after)
    if not added and not gone:
        return "same names"
    parts = [f"+{len(added)}: {', '.join(added[:6])}{' ...' if len(added) > 6 else ''}"] if added else []
    parts += [f"-{len(gone)}: {', '.join(gone[:6])}{' ...' if len(gone) > 6 else ''}"] if gone else []
    return "; ".join(parts)
