"""The working set's decision (python_udfs/working_set.py, ADR 0007) on rows, without Spark.

``cdc run`` reads the manifest and the state tables' files with pyarrow and decides in Python;
the end-to-end tests (the oracle, the crash test, the late-file and restage scenarios) check the
runs it plans. These check the rules one at a time.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from python_udfs import working_set

FORMATS = {"gg": "goldengate_trail", "hirdb": "hirdb_update_sql", "ct": "qlik_change_tables"}


def _file(feed, batch, source_file, byte_start=0, rows=1, status="new"):
    return {
        "feed": feed,
        "ingest_batch_id": batch,
        "source_file": source_file,
        "byte_start": byte_start,
        "rows": rows,
        "status": status,
    }


def test_a_new_file_sorting_before_an_applied_one_of_its_stream_rereads_an_ordered_feed():
    """A stream is a file name less its numbered suffix (``.000002``): a HiRDB SQLTXT stream.
    Other names are streams of their own (a trail file name, ``aa000002``, is not cut)."""
    applied = [
        _file("hirdb", "B1", "hirdb/SQLTXT_SV1_DST1.000002"),
        _file("gg", "B1", "gg/aa000002"),
        _file("ct", "B1", "ct/T__ct/20240102.000002"),
    ]
    late = [_file("hirdb", "B2", "hirdb/SQLTXT_SV1_DST1.000001")]
    assert working_set._late_feeds(late, applied, FORMATS) == ["hirdb"]
    # the stream's first file has no numbered suffix
    assert working_set._late_feeds(
        [_file("hirdb", "B2", "hirdb/SQLTXT_SV1_DST1")], applied, FORMATS
    ) == ["hirdb"]
    not_late = [
        _file("hirdb", "B2", "hirdb/SQLTXT_SV1_DST1.000003"),  # after the applied one
        _file("hirdb", "B2", "hirdb/SQLTXT_SV2_DST1.000001"),  # another stream
        _file("gg", "B2", "gg/aa000001"),  # another name: another stream
        _file("ct", "B2", "ct/T__ct/20240102.000001"),  # not an ordered format
        # read on from where the file grew, or a re-delivery
        _file("hirdb", "B2", "hirdb/SQLTXT_SV1_DST1.000001", byte_start=100),
        _file("hirdb", "B2", "hirdb/SQLTXT_SV1_DST1.000001", status="duplicate"),
    ]
    assert working_set._late_feeds(not_late, applied, FORMATS) == []
    # a restaged file re-reads its feed, whatever its format
    restaged = [_file("ct", "B2", "ct/T__ct/20240102.csv", status="restaged")]
    assert working_set._late_feeds(restaged, applied, FORMATS) == ["ct"]


def test_pending_transactions_start_from_their_earliest_batch_and_first_record():
    def pending(feed, batch, source_file, offset):
        record = (
            None if source_file is None else {"source_file": source_file, "record_offset": offset}
        )
        return {
            "feed": feed,
            "transaction_first_batch_id": batch,
            "transaction_first_record": record,
        }

    rows = [
        pending("gg", "B2", "gg/aa000002", 10),
        pending("gg", "B1", "gg/aa000002", 500),
        pending("gg", "B3", "gg/aa000001", 900),
        pending("ct", None, None, None),
    ]
    assert working_set._pending_rows(rows) == [
        ["from", "ct", None, None, None],
        ["from", "gg", "B1", "gg/aa000001", 900],
    ]


def test_a_trail_is_read_again_from_its_latest_files_last_transaction_start(tmp_path):
    raw = tmp_path / "raw"
    for batch, offsets in (("B1", [(0, 0), (50, 1), (90, 0)]), ("B2", [(130, 3), (170, 2)])):
        folder = raw / "raw_goldengate_trail" / f"ingest_batch_id={batch}"
        folder.mkdir(parents=True)
        table = pa.table(
            {
                "feed": ["gg"] * len(offsets),
                "source_file": ["gg/aa000002"] * len(offsets),
                "record_offset": [o for o, _t in offsets],
                "trans_ind": [t for _o, t in offsets],
            }
        )
        pq.write_table(table, folder / "part-0.parquet")
    applied = [
        _file("gg", "B1", "gg/aa000001"),
        _file("gg", "B1", "gg/aa000002"),
        _file("gg", "B2", "gg/aa000002", byte_start=120),
        _file("gg", "B2", "gg/aa000003", rows=0),  # a file with no record yet is not the latest
    ]
    assert working_set._trail_rows(raw, applied, FORMATS) == [
        ["from", "gg", "B1", "gg/aa000002", 130]
    ]
    trail = working_set._dataset(raw / "raw_goldengate_trail")
    assert working_set._last_transaction_start(trail, "gg", "B2", "gg/aa000002") == 130
    assert working_set._last_transaction_start(trail, "gg", "B1", "gg/aa000009") == 0
