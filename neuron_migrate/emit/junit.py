"""JUnit XML for CI test dashboards: one test case per finding, each with one `<failure>`, in one
test suite per rule (or per file, `--junit-group file`). So `tests` and `failures` count the same
things at every level (a dashboard's passed = tests - failures is never negative), as the JUnit
schema expects one failure per test case. A clean run has one passing case, so dashboards show the
check ran. Text from the scanned tree is stripped of characters XML 1.0 cannot hold."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from neuron_migrate.emit.escape import xml_text
from neuron_migrate.emit.options import EmitOptions, JUnitGrouping
from neuron_migrate.findings import Finding, Report

SUITE = "neuron-migrate"


def _suite_name(f: Finding, grouping: JUnitGrouping, options: EmitOptions) -> str:
    if grouping is JUnitGrouping.FILE:
        return f.path
    rule = options.pack.get(f.code) if options.pack else None
    return f"{f.code} {rule.name}" if rule else f.code


def _case(suite: ET.Element, classname: str, f: Finding) -> None:
    name = xml_text(f"{f.location()} {f.code}")
    case = ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")
    message = xml_text(f"{f.code} {' '.join(f.message.split())}")
    failure = ET.SubElement(case, "failure", message=message, type=f.severity.value)
    detail = f"{f.location()}: {f.code} [{f.severity.value}, fix: {f.fix_class.value}] {f.message}"
    if f.source_line.strip():
        detail += f"\n    {f.source_line.strip()}"
    failure.text = xml_text(detail)


def emit(report: Report, options: EmitOptions) -> str:
    grouping = options.junit_grouping
    groups: dict[str, list[Finding]] = defaultdict(list)
    for f in report.findings:
        groups[_suite_name(f, grouping, options)].append(f)
    total = len(report.findings)
    suites = ET.Element("testsuites", name=SUITE, tests=str(max(total, 1)), failures=str(total),
                        errors="0", skipped="0", time=f"{report.duration_s:.3f}")
    classname = f"{SUITE}.{report.command}.{grouping.value}"
    if not groups:
        suite = ET.SubElement(suites, "testsuite", name=f"{SUITE} {report.command}", tests="1",
                              failures="0", errors="0", skipped="0", time=f"{report.duration_s:.3f}")
        ET.SubElement(suite, "testcase", classname=classname,
                      name="no findings", time="0")
    for name in sorted(groups):
        findings = groups[name]
        suite = ET.SubElement(suites, "testsuite", name=xml_text(name), tests=str(len(findings)),
                              failures=str(len(findings)), errors="0", skipped="0", time="0")
        for f in findings:
            _case(suite, classname, f)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
