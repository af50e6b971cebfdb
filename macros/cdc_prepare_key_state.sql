{% macro cdc_prepare_key_state() %}
    {#-
        On-run-start SQL that makes the previous run's key state readable as the source
        cdc_state.int_key_state (ADR 0025): `create table if not exists` with int_key_state's
        columns and file format, empty, on a first run (the model then appends to it as an
        incremental model); `drop table if exists` on a --full-refresh that selects
        int_key_state, so that a full refresh killed half way leaves no state and the next run
        applies every change again. The relation goes into dbt's relation cache, which was
        listed before the hook ran.
    -#}
    {%- set relation = source('cdc_state', 'int_key_state') -%}
    {%- set node = graph.nodes.get('model.cdc_changelog.int_key_state') if execute else none -%}
    {%- if node is none -%}
        select 1 as key_state_prepared
    {%- elif flags.FULL_REFRESH and node.unique_id in selected_resources -%}
        drop table if exists {{ relation }}
    {%- else -%}
        {%- do adapter.cache_added(relation.incorporate(type='table')) -%}
        create table if not exists {{ relation }} (
            source_schema string,
            source_table string,
            primary_key string,
            key_id string,
            current_version {{ cdc_version_type() }},
            last_event_order struct<change_position: string, source_file: string, record_index: bigint>,
            rebuilt_generation string,
            version_count bigint,
            state_generation string,
            feed string
        )
        using {{ node.config.file_format or 'parquet' }}
        partitioned by (feed)
    {%- endif -%}
{% endmacro %}
