{#-
    One row per live key of every catalog table (long form): the current version of each key
    that is not deleted (DESIGN.md §5, §6), from int_key_state. A Delta table written by one
    MERGE per run (ADR 0018): the keys a run touched are updated, inserted or deleted, the
    others left as they are, so its Change Data Feed (delta.enableChangeDataFeed) holds what
    each run changed: insert, update pre- and post-image, delete. Which keys: those of
    int_key_state touched since the generation of this table's last commit (its Delta
    history's userMetadata, macro cdc_merged_generation), so a run killed before the merge
    merges them in the next run. The row is the map of column to
    canonical text built by applying the change log in change order: INSERT and LOAD set the
    row, UPDATE overlays the columns its after image carries, a key change moves the row to the
    new key, DELETE removes it, TRUNCATE and full loads remove every earlier row of the table.

    Partitioned by feed and table_key (a short hash of the table's names, macro cdc_table_key):
    a typed per-table view reads its own table's folder only, whatever the number of tables.
    The names themselves are not partition values: names from the data may be longer than a
    folder name or a metastore partition value can be, or hold characters a path escapes. Not shuffled by table before the
    write (that cost 5 to 24 s at 5 M events): int_key_state is partitioned by feed, so each
    table's folder gets the files of its feed's few tasks.
-#}

{{ config(
    materialized='incremental',
    incremental_strategy='merge',
    unique_key='current_state_id',
    cdc_delete_column='is_deleted',
    partition_by=['feed', 'table_key'],
    tblproperties={'delta.enableChangeDataFeed': 'true'},
    pre_hook="{{ cdc_tag_commits() }}",
) }}

{%- set merged = cdc_merged_generation() if is_incremental() else '' %}

with

key_state as (
    select * from {{ ref('int_key_state') }}
    {%- if is_incremental() %}
    -- the keys touched since the generation of this table's last commit (every key when its
    -- history has none): their rows are upserted, the deleted ones deleted
    where touched_generation > '{{ merged }}'
    {%- endif %}
),

final as (
    select
        to_json(array(key_state.feed, key_state.source_schema, key_state.source_table, key_state.primary_key)) as current_state_id,
        key_state.feed,
        key_state.source_schema,
        key_state.source_table,
        key_state.primary_key,
        current_version.row,
        current_version.operation as last_operation,
        current_version.opened_order.change_position as last_change_position,
        current_version.opened_at as last_committed_at,
        {{ cdc_table_key_sql('key_state.feed', 'key_state.source_schema', 'key_state.source_table') }} as table_key,
        -- read by the merge alone (macro spark__get_merge_sql): on a first build or a full
        -- refresh the table gets the live keys and no such column
        current_version.is_deleted
    from key_state
)

{% if is_incremental() %}
    select * from final
{% else %}
    select * except (is_deleted) from final
    where not is_deleted
{% endif %}
