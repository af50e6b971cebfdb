{% macro cdc_generation() %}
    {#-
        The generation of this dbt invocation: its start time (UTC) as sortable text
        YYYYMMDDTHHMMSSffffff. change_log rows are stamped with the generation that applied
        them, and the state models remember the last generation they consumed.
    -#}
    {{ return(run_started_at.strftime('%Y%m%dT%H%M%S%f')) }}
{% endmacro %}


{% macro cdc_state_watermark() %}
    {#-
        The last generation whose change_log rows the state models have applied: the table
        property cdc.state_generation of int_key_state (its post-hook sets it once the state
        is written, see cdc_state_watermark_hook), read from the metastore when the calling
        model compiles. A lake whose int_key_state has no such property yet (built before it
        existed) gives max(state_generation) of its rows. An empty string (every change is new)
        with --full-refresh, and when int_key_state or the version store int_history_versions
        does not exist yet. Raises a compiler error naming the fix (`cdc run -- --full-refresh`)
        when int_key_state has no version_count column (written by a release without it).
    -#}
    {%- if not execute or flags.FULL_REFRESH -%}
        {{ return('') }}
    {%- endif -%}
    {%- set state = adapter.get_relation(database=this.database, schema=this.schema, identifier='int_key_state') -%}
    {%- set versions = adapter.get_relation(database=this.database, schema=this.schema, identifier='int_history_versions') -%}
    {%- if state is none or versions is none -%}
        {{ return('') }}
    {%- endif -%}
    {%- if not cdc_relation_has_column(state, 'version_count') -%}
        {{ exceptions.raise_compiler_error(
            state ~ ' was written by an earlier release of cdc_changelog: it has no version_count '
            ~ 'column, which this release keeps per key. Rebuild the state models once with '
            ~ '`cdc run -- --full-refresh` (every model again from the raw tables).'
        ) }}
    {%- endif -%}
    {%- set recorded = [] -%}
    {%- for key, value in run_query('show tblproperties ' ~ state).rows if key == 'cdc.state_generation' -%}
        {%- do recorded.append(value) -%}
    {%- endfor -%}
    {%- if recorded -%}
        {{ return(recorded[0]) }}
    {%- endif -%}
    {%- set rows = run_query('select coalesce(max(state_generation), \'\') as generation from ' ~ state).rows -%}
    {{ return(rows[0][0] if rows else '') }}
{% endmacro %}


{% macro cdc_relation_has_column(relation, column_name) %}
    {#-
        Whether `relation` (an existing table) has the top-level column `column_name`: read from
        the schema tree dbt's relation cache holds for it (`show table extended`, listed when
        dbt starts: no query), else asked with `describe` (adapter.get_columns_in_relation).
    -#}
    {%- set information = relation.information or '' -%}
    {%- if information -%}
        {{ return(('\n |-- ' ~ column_name ~ ':') in information) }}
    {%- endif -%}
    {{ return(column_name in adapter.get_columns_in_relation(relation) | map(attribute='name') | list) }}
{% endmacro %}


{% macro cdc_state_watermark_hook() %}
    {#-
        Post-hook of int_key_state: SQL that records this run's generation as the table
        property cdc.state_generation, the watermark the next run reads (cdc_state_watermark).
        It runs after the state is written, so a run killed while Spark moves the state's
        partitions into place, or just after, leaves the previous watermark: the next run
        applies this run's generations again, and the keys they touched, whose state may
        already hold them, are rebuilt from all their changes (int_apply_keys).
    -#}
    alter table {{ this }} set tblproperties ('cdc.state_generation' = '{{ cdc_generation() }}')
{% endmacro %}


{% macro cdc_overlay(row, image) %}
    {#-
        SQL map: `image` laid over `row` (DESIGN.md §6.3): columns present in the image take its
        value (an explicit NULL included), absent columns keep the row's value. A null row is
        an empty one.
    -#}
    map_concat(
        map_filter(coalesce({{ row }}, cast(map() as map<string, string>)), (k, v) -> not map_contains_key({{ image }}, k)),
        {{ image }}
    )
{% endmacro %}


{% macro cdc_key_events(relation) %}
    {#-
        Rows (feed, source_schema, source_table, primary_key, event) of the row events of the
        change_log rows in `relation` (a CTE name), for int_history_versions (DESIGN.md §6):
        INSERT and LOAD are SET (the row becomes the after image), UPDATE is OVERLAY, DELETE is
        REMOVE. An UPDATE whose before image has another key (before_primary_key) is a REMOVE of
        the old key and a SET of the new key with the before image overlaid by the after image;
        the SET names the old key (source_key), whose row it carries (int_history_versions).
        LOAD events carry their transaction (load_transaction), so that the reset of a full load
        is not applied to the keys the load itself sets (int_history_versions, `reset_events`).
    -#}
    select
        feed,
        source_schema,
        source_table,
        primary_key,
        named_struct(
            'event_order', {{ cdc_change_order() }},
            'event_rank', 1,
            'kind', case
                when operation = 'DELETE' then 'REMOVE'
                when operation != 'UPDATE' then 'SET'
                when before_primary_key is not null and before_primary_key != primary_key then 'SET'
                else 'OVERLAY'
            end,
            'image', case
                when operation = 'DELETE' then before_image
                when operation = 'UPDATE' and before_primary_key is not null and before_primary_key != primary_key
                    then {{ cdc_overlay('before_image', 'after_image') }}
                else after_image
            end,
            'committed_at', committed_at,
            'operation', operation,
            'load_transaction', case when operation = 'LOAD' then transaction_id end,
            'source_key', case
                when operation = 'UPDATE' and before_primary_key is not null and before_primary_key != primary_key
                    then before_primary_key
            end
        ) as event
    from {{ relation }}
    where primary_key is not null and operation in ('INSERT', 'UPDATE', 'DELETE', 'LOAD')
    union all
    select
        feed,
        source_schema,
        source_table,
        before_primary_key as primary_key,
        named_struct(
            'event_order', {{ cdc_change_order() }},
            'event_rank', 1,
            'kind', 'REMOVE',
            'image', before_image,
            'committed_at', committed_at,
            'operation', operation,
            'load_transaction', cast(null as string),
            'source_key', cast(null as string)
        ) as event
    from {{ relation }}
    where
        operation = 'UPDATE'
        and before_primary_key is not null
        and before_primary_key != primary_key
{% endmacro %}


{% macro cdc_version_type() %}
    {#- The SQL type of one row version (see cdc_fold_versions). -#}
    struct<
        opened_order: struct<change_position: string, source_file: string, record_index: bigint>,
        opened_at: timestamp,
        operation: string,
        row: map<string, string>,
        is_deleted: boolean
    >
{% endmacro %}
