"""The architecture decision records in docs/decisions/ (issue 45, item 4): each opens with a
status line, accepted or superseded by a record that exists, so a reader knows at once whether
the record still holds."""

import re
from pathlib import Path

import pytest

DECISIONS = Path(__file__).resolve().parents[1] / "docs" / "decisions"
RECORDS = sorted(DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))


def test_records_are_numbered_once():
    numbers = [path.name[:4] for path in RECORDS]
    assert RECORDS and len(numbers) == len(set(numbers))


@pytest.mark.parametrize("path", RECORDS, ids=lambda path: path.name[:4])
def test_each_record_opens_with_its_title_and_status(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith(f"# {path.name[:4]} ")
    status = re.match(r"Status: (accepted|superseded by (\d{4}))\b", lines[2])
    assert status, f"{path.name}: line 3 is {lines[2]!r}"
    if status[2]:
        assert list(DECISIONS.glob(f"{status[2]}-*.md")), f"{path.name}: no record {status[2]}"


def _status_paragraph(lines: list[str]) -> str:
    """A record's status paragraph (line 3 up to the first blank line), as one line."""
    lines = lines[2:]
    return " ".join(lines[: lines.index("")] if "" in lines else lines)


def test_the_index_lists_every_record_with_its_title_and_status():
    """docs/decisions/README.md (issue 74): one row per record, in number order, with the
    title of its first line, its status (superseded, accepted, or accepted with parts a later
    record superseded) and the records its status paragraph says superseded it."""
    index = (DECISIONS / "README.md").read_text(encoding="utf-8")
    rows = [line for line in index.splitlines() if line.startswith("| [")]
    expected = []
    for path in RECORDS:
        lines = path.read_text(encoding="utf-8").splitlines()
        status = _status_paragraph(lines)
        by = sorted(set(re.findall(r"superseded by (\d{4})", status)))
        if status.startswith("Status: superseded"):
            kind = "superseded"
        else:
            kind = "accepted, in part superseded" if by else "accepted"
        title = lines[0].removeprefix(f"# {path.name[:4]} ")
        expected.append(f"| [{path.name[:4]}]({path.name}) | {title} | {kind} | {', '.join(by)} |")
    assert rows == expected
