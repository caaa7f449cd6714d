"""The gate's JUnit XML: one test case per backend, scenario, world size and check, as CI systems render them.

``classname`` is ``test_conformance[<case id>]`` (the pytest id of the same case; under a compute-sanitizer tool
the record id, ``<case id>@<tool>``) and ``name`` the check, so a case keeps its name from night to night. A
failing check carries the divergence report and the replay command; a check of a case that hung is a failure of
type ``hang`` (a verdict on the kernels: its ranks did not finish within the example's budget), whose message names
the ranks and the replay command; an expected failure (a known divergence) is a skipped test whose message gives the
reason and the link.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from conformance.report.gate import CheckOutcome, counts

SUITE = "conformance"


def classname(case_id: str) -> str:
    """The JUnit classname of a case's record: its pytest id (and ``@<tool>`` under a compute-sanitizer tool)."""
    return f"test_conformance[{case_id}]"


def junit_tree(outcomes: list[CheckOutcome], timestamp: str, seconds: float) -> ET.ElementTree:
    """``<testsuites>`` holding one ``<testsuite>`` with a ``<testcase>`` per outcome."""
    n = counts(outcomes)
    totals = {"tests": str(len(outcomes)), "failures": str(n["failed"] + n["xpassed"] + n["hang"]),
              "errors": str(n["error"]), "skipped": str(n["xfailed"] + n["skipped"]), "time": f"{seconds:.3f}"}
    root = ET.Element("testsuites", {"name": SUITE, **totals})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE, "timestamp": timestamp, **totals})
    for o in outcomes:
        case = ET.SubElement(suite, "testcase", {"classname": classname(o.case_id), "name": o.check,
                                                  "time": f"{o.seconds:.3f}"})
        if o.status == "failed":
            ET.SubElement(case, "failure", {"type": "divergence", "message": o.message}).text = o.detail
        elif o.status == "hang":
            ET.SubElement(case, "failure", {"type": "hang", "message": o.message}).text = o.detail
        elif o.status == "xpassed":
            ET.SubElement(case, "failure", {"type": "xpass-strict", "message": o.message}).text = o.message
        elif o.status == "error":
            ET.SubElement(case, "error", {"type": "error", "message": o.message}).text = o.detail
        elif o.status == "xfailed":
            ET.SubElement(case, "skipped", {"type": "xfail", "message": o.message}).text = o.detail
        elif o.status == "skipped":
            ET.SubElement(case, "skipped", {"type": "not run", "message": o.message})
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(path: Path, outcomes: list[CheckOutcome], timestamp: str, seconds: float) -> None:
    """Write the JUnit XML file (UTF-8, with declaration)."""
    junit_tree(outcomes, timestamp, seconds).write(path, encoding="utf-8", xml_declaration=True)
