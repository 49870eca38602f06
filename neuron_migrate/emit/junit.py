"""JUnit XML for CI test dashboards: one test suite, one test case per rule (or per file), one
`<failure>` per finding. A clean run still has one passing case, so dashboards show the check ran."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from neuron_migrate.emit.options import EmitOptions, JUnitGrouping
from neuron_migrate.findings import Finding, Report

SUITE = "neuron-migrate"


def _case_name(f: Finding, grouping: JUnitGrouping, options: EmitOptions) -> str:
    if grouping is JUnitGrouping.FILE:
        return f.path
    rule = options.pack.get(f.code) if options.pack else None
    return f"{f.code} {rule.name}" if rule else f.code


def emit(report: Report, options: EmitOptions) -> str:
    grouping = options.junit_grouping
    cases: dict[str, list[Finding]] = defaultdict(list)
    for f in report.findings:
        cases[_case_name(f, grouping, options)].append(f)
    suites = ET.Element("testsuites", name=SUITE)
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=f"{SUITE} {report.command}",
        tests=str(max(len(cases), 1)),
        failures=str(len(report.findings)),
        errors="0",
        skipped="0",
        time=f"{report.duration_s:.3f}",
    )
    classname = f"{SUITE}.{report.command}.{grouping.value}"
    if not cases:
        ET.SubElement(suite, "testcase", classname=classname, name="no findings", time="0")
    for name in sorted(cases):
        case = ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")
        for f in cases[name]:
            failure = ET.SubElement(
                case, "failure", message=f"{f.code} {' '.join(f.message.split())}", type=f.severity.value
            )
            detail = f"{f.location()}: {f.code} [{f.severity.value}, fix: {f.fix_class.value}] {f.message}"
            failure.text = detail + (f"\n    {f.source_line.strip()}" if f.source_line.strip() else "")
    suites.set("tests", suite.get("tests", "0"))
    suites.set("failures", suite.get("failures", "0"))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
