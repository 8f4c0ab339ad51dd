"""JUnit XML: one ``<testcase>`` per checked session, in the shape of pytest's ``xunit2`` family.

Strict CI consumers validate against the Jenkins xUnit ``junit-10.xsd`` that
pytest's own tests use (vendored as ``tests/data/junit/junit-10.xsd``); it
allows no ``skipped`` on ``<testsuites>`` and no ``file`` on ``<testcase>``,
so neither is written: a case's file is its ``classname`` (``inspector.`` +
the log's folder, dotted) and the first line of its failure or output text
(``file: PATH``).

A session fails (``<failure>``) when it has findings at or above
``fail_on``; all its findings are listed in the failure body, lower ones
also in ``<system-out>``.  Findings that belong to no checked session (a
capture line no log explains, an unreadable capture) get a test case named
after their file; unreadable inputs are ``<error>`` test cases.  Text from
logs is made XML-safe: characters XML 1.0 cannot carry are shown as escapes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import PurePath
from typing import Any, Callable, Iterator

from invariants.gate.formats.context import ReportContext
from invariants.gate.report import after_location, location
from invariants.gate.view import ReportView
from invariants.model.findings import SEVERITY_RANK, Finding

# Not representable in XML 1.0, or a terminal control when the file is printed (DEL, C1: U+009B is CSI).
_XML_BAD = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)


def xml_safe(text: str) -> str:
    def esc(m: re.Match) -> str:
        o = ord(m.group())
        return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"

    return _XML_BAD.sub(esc, text)


def _line(f: Finding) -> str:
    loc = location(f)
    return f"{f.severity} {f.rule} {loc}{': ' if loc else ''}{after_location(f)}"


def _case(classname: str, name: str, file: str | None, findings: list, threshold: int) -> tuple[ET.Element, int]:
    case = ET.Element("testcase", {"classname": xml_safe(classname), "name": xml_safe(name), "time": "0"})
    failing = [f for f in findings if SEVERITY_RANK.get(f.severity, 0) >= threshold]
    body = ([f"file: {file}"] if file else []) + [_line(f) for f in findings]
    if failing:
        first = failing[0]
        more = f" (+{len(failing) - 1} more)" if len(failing) > 1 else ""
        fail = ET.SubElement(
            case, "failure", {"type": first.rule, "message": xml_safe(f"{first.rule}: {first.message}{more}")}
        )
        fail.text = xml_safe("\n".join(body))
    elif findings:
        out = ET.SubElement(case, "system-out")
        out.text = xml_safe("\n".join(body))
    return case, (1 if failing else 0)


def _cases(view: ReportView, threshold: int) -> Iterator[tuple[ET.Element, int, int]]:
    """(test case, failed, errored) in report order: one per session, one per file no session owns,
    one per unusable input."""
    from invariants.gate.report import session_row

    for b in view.blocks:
        if b.session is not None:
            row = session_row(b.session)
            file = row["file"]
            classname = (
                "inspector." + PurePath(file).parent.as_posix().strip("/").replace("/", ".") if file else "inspector"
            )
            case, failed = _case(classname, row["session"], file, b.findings, threshold)
        else:
            name = PurePath(b.file).name if b.file else "(no file)"
            case, failed = _case("inspector.inputs", name, b.file or None, b.findings, threshold)
        yield case, failed, 0
    for problem in view.problems:
        case = ET.Element(
            "testcase", {"classname": "inspector.inputs", "name": xml_safe(problem.split(": ")[0]), "time": "0"}
        )
        err = ET.SubElement(case, "error", {"type": "unreadable-input", "message": xml_safe(problem)})
        err.text = xml_safe(problem)
        yield case, 0, 1


def write_junit(view: ReportView, ctx: ReportContext, out: Callable[[str], Any]) -> None:
    """The document, its test cases streamed: the totals (the suite's attributes) are counted in a first
    reading of the view, each case written as it is made in the second."""
    threshold = SEVERITY_RANK.get(ctx.fail_on, 2)
    tests = failures = errors = 0
    for _, failed, errored in _cases(view, threshold):
        tests += 1
        failures += failed
        errors += errored
    root = ET.Element("testsuites", {"name": "inspector"})
    suite = ET.SubElement(root, "testsuite", {"name": "inspector check", "time": "0"})
    for el in (root, suite):
        el.set("tests", str(tests))
        el.set("failures", str(failures))
        el.set("errors", str(errors))
    suite.set("skipped", "0")  # allowed on <testsuite> only
    out('<?xml version="1.0" encoding="UTF-8"?>\n')
    if not tests:
        ET.indent(root)
        out(ET.tostring(root, encoding="unicode") + "\n")
        return
    ET.SubElement(suite, "testcase")  # a stand-in, cut out: the cases are written one by one in its place
    ET.indent(root)
    head, _, tail = ET.tostring(root, encoding="unicode").partition("<testcase />")
    out(head)
    first = True
    for case, _, _ in _cases(view, threshold):
        ET.indent(case, level=2)
        out(("" if first else "\n    ") + ET.tostring(case, encoding="unicode"))
        first = False
    out(tail + "\n")
