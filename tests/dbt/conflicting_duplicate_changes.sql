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
-#}

with

change_table_rows as (
    select
        feed,
        header__change_seq as change_position,
        header__change_oper as operation,
        to_json(data) as content,
        source_file,
        ingest_batch_id
    from {{ source('qlik_change_tables', 'raw_qlik_change_tables') }}
    where {{ cdc_committed_batches() }} and file_kind != 'full_load'
),

kafka_messages as (
    select
        feed,
        change_sequence as change_position,
        operation,
        to_json(struct(data, before_data)) as content,
        source_file,
        ingest_batch_id
    from {{ source('qlik_kafka', 'raw_qlik_kafka') }}
    where {{ cdc_committed_batches() }} and operation != 'REFRESH'
),

deliveries as (
    select * from change_table_rows
    union all
    select * from kafka_messages
),

new_deliveries as (
    select distinct
        feed,
        change_position,
        operation
    from deliveries
    where {{ cdc_new_batches_predicate() }}
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
            new_deliveries.feed,
            new_deliveries.change_position,
            new_deliveries.operation
        from new_deliveries
    )
    group by feed, change_position, operation
    having count(distinct content) > 1
)

select * from conflicts
