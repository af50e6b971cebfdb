{% macro cdc_prepare_key_state() %}
    {#-
        On-run-start SQL that makes the previous run's key state readable as the source
        cdc_state.int_key_state (ADR 0025): `create table if not exists` with int_key_state's
        columns and file format, empty on a first run (the model then writes it as an
        incremental model). The relation goes into dbt's relation cache, which was listed
        before the hook ran. On a --full-refresh that selects int_key_state, the state is
        dropped first (run_query, when the hook runs): the apply reads it empty, and a full
        refresh killed half way leaves it empty, so the next run applies every change again.
        A state an earlier release wrote without version_count or table_key (the state is
        partitioned by table since ADR 0028) stops the run with a compiler error that names the
        fix (`cdc run -- --full-refresh`).
    -#}
    {%- set relation = source('cdc_state', 'int_key_state') -%}
    {%- set node = graph.nodes.get('model.cdc_changelog.int_key_state') if execute else none -%}
    {%- if node is none -%}
        select 1 as key_state_prepared
    {%- else -%}
        {%- if flags.FULL_REFRESH and node.unique_id in selected_resources -%}
            {%- do run_query('drop table if exists ' ~ relation) -%}
        {%- else -%}
            {%- set existing = adapter.get_relation(
                database=relation.database, schema=relation.schema, identifier=relation.identifier
            ) -%}
            {%- for column in ['version_count', 'table_key'] -%}
                {%- if existing is not none and not cdc_relation_has_column(existing, column) -%}
                    {{ exceptions.raise_compiler_error(
                        existing ~ ' was written by an earlier release of cdc_changelog: it has no '
                        ~ column ~ ' column, which this release keeps per key. Rebuild the state '
                        ~ 'models once with `cdc run -- --full-refresh` (every model again from '
                        ~ 'the raw tables).'
                    ) }}
                {%- endif -%}
            {%- endfor -%}
        {%- endif -%}
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
            feed string,
            table_key string
        )
        using {{ node.config.file_format or 'parquet' }}
        partitioned by (feed, table_key)
    {%- endif -%}
{% endmacro %}
