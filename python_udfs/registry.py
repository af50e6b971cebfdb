"""The feed formats this version decodes (DESIGN.md §1), in the order the raw tables list them.

One :class:`~python_udfs.feed_format.FeedFormat` per package ``python_udfs/<format>/``. The
staging job, ``config`` (format names and options), ``cdc scaffold`` (Spark types) and the test
of the dbt macro ``cdc_format_names`` iterate over :data:`FORMATS`; none of them names a
format. Adding a format is a package with ``decoder.py`` and ``spec.py`` and one line here (ADR
0013).
"""

from __future__ import annotations

from python_udfs.feed_format import FeedFormat
from python_udfs.goldengate_trail.spec import FEED_FORMAT as GOLDENGATE_TRAIL
from python_udfs.hirdb_update_sql.spec import FEED_FORMAT as HIRDB_UPDATE_SQL
from python_udfs.linkexpress_extract.spec import FEED_FORMAT as LINKEXPRESS_EXTRACT
from python_udfs.qlik_change_tables.spec import FEED_FORMAT as QLIK_CHANGE_TABLES
from python_udfs.qlik_kafka.spec import FEED_FORMAT as QLIK_KAFKA

#: Format name → :class:`FeedFormat`.
FORMATS: dict[str, FeedFormat] = {
    f.name: f
    for f in (
        QLIK_CHANGE_TABLES,
        QLIK_KAFKA,
        GOLDENGATE_TRAIL,
        HIRDB_UPDATE_SQL,
        LINKEXPRESS_EXTRACT,
    )
}
