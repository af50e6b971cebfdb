{{ config(severity='warn') }}

{#-
    Two deliveries of one change position with different content (DESIGN.md §6.5). Staging keeps
    the first delivery of a position and drops exact re-deliveries silently; a re-delivery whose
    content differs means the source replayed something else under the same change sequence,
    and is listed here (a warning: run with --warn-error to fail on it). Only the Qlik formats
    carry their position in the record; the other feeds' positions come from the file name and
    byte offset, where a changed file is refused by staging instead. Checks the positions
    delivered by batches staged since the run before the last one; var cdc_test_scope: all
    checks every delivery.

    A repeat of a checked position sorts at or after the feed's first checked position, so the
    earlier deliveries are read from there on only (position_floor, literals found when the
    test compiles): the raw tables are sorted by file and offset in row groups of 16 MiB
    (python_udfs/staging.py), and parquet skips the row groups of older positions.
    Runs after int_staged_batches (depends_on), which runs after change_log: this run's
    generation is then the newest one and "the run before the last one" is the previous run.
    A warning blocks nothing, so the test hangs off int_staged_batches, a model no other
    model reads: it runs beside the apply models instead of between change_log and them (a
    test of change_log would hold back change_log's children until it ends).
-#}

-- depends_on: {{ ref('int_staged_batches') }}

{#- whether only some deliveries are checked (var cdc_test_scope: all checks every one), once
    the models it hangs off are built (not at parse time, nor when sqlfluff compiles it on an
    empty lake); on a first run every batch is in scope and the floors are the lowest positions -#}
{%- set scoped = execute and cdc_new_batches_predicate() != 'true'
    and load_relation(ref('int_staged_batches')) is not none %}
{%- set position_floor = 'true' %}
{%- if scoped %}
    {%- set floor_query %}
        select feed, min(header__change_seq)
        from {{ source('qlik_change_tables', 'raw_qlik_change_tables') }}
        where {{ cdc_committed_batches() }} and file_kind != 'full_load' and {{ cdc_new_batches_predicate() }}
        group by feed
        union all
        select feed, min(change_sequence)
        from {{ source('qlik_kafka', 'raw_qlik_kafka') }}
        where {{ cdc_committed_batches() }} and operation != 'REFRESH' and {{ cdc_new_batches_predicate() }}
        group by feed
    {%- endset %}
    {%- set floors = [] %}
    {%- for feed, first_position in run_query(floor_query).rows if first_position is not none %}
        {%- do floors.append(
            '(feed = ' ~ cdc_string_literal(feed) ~ ' and change_position >= ' ~ cdc_string_literal(first_position) ~ ')'
        ) %}
    {%- endfor %}
    {%- set position_floor = '(' ~ (floors | join(' or ') if floors else 'false') ~ ')' %}
{%- endif %}


with

change_table_rows as (
    select * from (
        select
            feed,
            header__change_seq as change_position,
            header__change_oper as operation,
            data,
            source_file,
            ingest_batch_id
        from {{ source('qlik_change_tables', 'raw_qlik_change_tables') }}
        where {{ cdc_committed_batches() }} and file_kind != 'full_load'
    ) as change_table_deliveries
    where {{ position_floor }}
),

kafka_messages as (
    select * from (
        select
            feed,
            change_sequence as change_position,
            operation,
            data,
            before_data,
            source_file,
            ingest_batch_id
        from {{ source('qlik_kafka', 'raw_qlik_kafka') }}
        where {{ cdc_committed_batches() }} and operation != 'REFRESH'
    ) as kafka_deliveries
    where {{ position_floor }}
),

delivered_positions as (
    -- positions only: the scan of every delivery reads three short columns, not the images
    select
        feed,
        change_position,
        operation,
        ingest_batch_id
    from change_table_rows
    union all
    select
        feed,
        change_position,
        operation,
        ingest_batch_id
    from kafka_messages
),

repeated_positions as (
    -- the checked positions (one delivery of them in the batches in scope) delivered more than
    -- once, the only ones that can conflict: none, usually, and then the images are not read
    -- at all; one aggregation, no join of the new positions back to the deliveries
    select
        feed,
        change_position,
        operation
    from delivered_positions
    group by feed, change_position, operation
    having count(*) > 1 and bool_or({{ cdc_new_batches_predicate() }})
),

deliveries as (
    select
        feed,
        change_position,
        operation,
        to_json(data) as content,
        source_file
    from change_table_rows
    union all
    select
        feed,
        change_position,
        operation,
        to_json(struct(data, before_data)) as content,
        source_file
    from kafka_messages
),

conflicts as (
    select
        feed,
        change_position,
        operation,
        count(distinct content) as variants,
        collect_set(source_file) as source_files
    from deliveries
    where (feed, change_position, operation) in (
        select
            repeated_positions.feed,
            repeated_positions.change_position,
            repeated_positions.operation
        from repeated_positions
    )
    group by feed, change_position, operation
    having count(distinct content) > 1
)

select * from conflicts
